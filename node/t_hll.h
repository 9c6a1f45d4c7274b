/* node/t_hll.h: hll commands. */
#pragma once
#include "node/cmds.h"

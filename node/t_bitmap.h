/* node/t_bitmap.h: bitmap commands. */
#pragma once
#include "node/cmds.h"

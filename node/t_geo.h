/* node/t_geo.h: geo commands on sorted sets. */
#pragma once
#include "node/cmds.h"

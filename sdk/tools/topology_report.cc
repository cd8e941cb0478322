#include "sdk/tools/topology_report.h"

// Placeholder: written by the discovery work of issue 4.
#ifndef KDP_SDK_TOOLS_TOPOLOGY_REPORT_H_
#define KDP_SDK_TOOLS_TOPOLOGY_REPORT_H_
#endif  // KDP_SDK_TOOLS_TOPOLOGY_REPORT_H_

// ppb/partition/devices_document.hpp — the ppb.devices/1 document: the accelerators ppb knows
// (ppb/partition/cluster.hpp, known_devices) with every figure and its source, as `ppb devices
// --json` prints it and ppb.devices() returns it.
#ifndef PPB_PARTITION_DEVICES_DOCUMENT_HPP
#define PPB_PARTITION_DEVICES_DOCUMENT_HPP

#include <boost/json/object.hpp>

namespace ppb::partition {

// {"format": "ppb.devices/1", "devices": [{"name", "description", "memory_gib",
// "runtime_memory_gib", "memory_bandwidth_tb_s", "bf16_tflops", "fp8_tflops", "fp32_tflops",
// "intra_node_gb_s", "devices_per_node", "network_gb_s", "fp8_transposes", "source"}, ...]} in
// the table's order.
[[nodiscard]] boost::json::object devices_document();

}  // namespace ppb::partition

#endif  // PPB_PARTITION_DEVICES_DOCUMENT_HPP

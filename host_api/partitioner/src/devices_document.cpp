// The ppb.devices/1 document (ppb/partition/devices_document.hpp).
#include <ppb/partition/cluster.hpp>
#include <ppb/partition/devices_document.hpp>

#include <boost/json/array.hpp>

namespace ppb::partition {

boost::json::object devices_document() {
    boost::json::array devices;
    for (const DeviceSpec& d : known_devices()) {
        devices.push_back(boost::json::object{
            {"name", d.name},
            {"description", d.description},
            {"memory_gib", d.memory_gib},
            {"runtime_memory_gib", d.runtime_memory_gib},
            {"memory_bandwidth_tb_s", d.memory_bandwidth_tb_s},
            {"bf16_tflops", d.bf16_tflops},
            {"fp8_tflops", d.fp8_tflops},
            {"fp32_tflops", d.fp32_tflops},
            {"intra_node_gb_s", d.intra_node_gb_s},
            {"devices_per_node", d.devices_per_node},
            {"network_gb_s", d.network_gb_s},
            {"fp8_transposes", d.fp8_transposes},
            {"source", d.source},
        });
    }
    return boost::json::object{{"format", "ppb.devices/1"}, {"devices", std::move(devices)}};
}

}  // namespace ppb::partition

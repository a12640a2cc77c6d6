// What `ppb simulate` prints for people: the iteration as a table (the ppb.simulation/1
// document for programs is the library's, ppb/partition/simulate_saved_plan.hpp).
#ifndef PPB_SIMULATION_OUTPUT_HPP
#define PPB_SIMULATION_OUTPUT_HPP

#include <ppb/partition/simulate_saved_plan.hpp>

#include <string>

namespace ppb::cli {

[[nodiscard]] std::string render_simulation(const partition::SavedPlanSimulation& simulated);

}  // namespace ppb::cli

#endif  // PPB_SIMULATION_OUTPUT_HPP

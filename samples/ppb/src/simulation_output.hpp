// What `ppb simulate` prints: a table for people, ppb.simulation/1 JSON for programs.
#ifndef PPB_SIMULATION_OUTPUT_HPP
#define PPB_SIMULATION_OUTPUT_HPP

#include "simulation_plan.hpp"

#include <ppb/simulator.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace ppb::cli {

[[nodiscard]] std::string render_simulation(const Simulation& sim, const SimulationPlan& plan,
                                            std::string_view source);

[[nodiscard]] boost::json::object simulation_document(const Simulation& sim,
                                                      const SimulationPlan& plan,
                                                      std::string_view source);

}  // namespace ppb::cli

#endif  // PPB_SIMULATION_OUTPUT_HPP

// Maps stage type names to factories. Adding a stage is one line in registry.cc.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/stage.hh"

namespace fzg {

using StageFactory = std::function<std::unique_ptr<Stage>(const nlohmann::json& params)>;

std::unique_ptr<Stage> make_stage(const std::string& type, const nlohmann::json& params);
std::vector<std::string> stage_types();

}  // namespace fzg

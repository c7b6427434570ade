#include "feature_options.h"

#include "options_cli.h"

namespace sluice::tools {

void AddFeatureOptions(CLI::App* app, FeatureArgs* a) { AddOptions(app, a); }

}  // namespace sluice::tools

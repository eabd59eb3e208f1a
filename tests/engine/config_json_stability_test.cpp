// The JSON a config is written as is part of every stored run: a run's config is read back and
// written again when it is shown, compared, forked or re-run, and a changed byte would make two
// identical configs look different. These files were written by the build before the config
// fields became one table (engine/config/run_config_fields.cpp); the writer must reproduce them
// byte for byte, for every preset and for configs that set every field away from its default.
#include "engine/config/presets.h"
#include "engine/config/run_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace mantissa;

namespace {

const std::filesystem::path kDir = MANTISSA_CONFIG_JSON_DIR;

std::string readFile(const std::filesystem::path& path)
{
    std::ifstream in(path);
    EXPECT_TRUE(in) << "cannot read " << path;
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST(ConfigJson, EveryPresetIsWrittenAsBefore)
{
    ASSERT_FALSE(presetNames().empty());
    for (const std::string& name : presetNames())
        EXPECT_EQ(runConfigToJson(presetConfig(name)) + "\n", readFile(kDir / ("preset-" + name + ".json")))
            << "preset " << name;
}

TEST(ConfigJson, ConfigsSettingEveryFieldAreWrittenAsBefore)
{
    int cases = 0;
    for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
        const std::string file = entry.path().filename().string();
        const std::string suffix = ".input.json";
        if (file.size() <= suffix.size() || file.substr(file.size() - suffix.size()) != suffix)
            continue;
        const std::string stem = file.substr(0, file.size() - suffix.size());
        const RunConfig config = parseRunConfig(readFile(entry.path()), file);
        const std::string written = runConfigToJson(config);
        EXPECT_EQ(written + "\n", readFile(kDir / (stem + ".expected.json"))) << file;
        // And what is written reads back to the same config, written the same again.
        EXPECT_EQ(runConfigToJson(parseRunConfig(written, file)), written) << file;
        ++cases;
    }
    EXPECT_EQ(cases, 4) << "a case file was added or lost in " << kDir;
}

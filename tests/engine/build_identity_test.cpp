// buildIdentity names the release and, in a git checkout, the commit the build was made from:
// what lets a study tell results of two builds apart between releases.
#include "engine/util/build_identity.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>

namespace {

// The output of a shell command, or nullopt-like empty with ok false where it fails.
struct Shell {
    bool ok;
    std::string out;
};

Shell shell(const std::string& command)
{
    std::array<char, 256> buffer{};
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    if (!pipe)
        return {false, {}};
    while (fgets(buffer.data(), buffer.size(), pipe.get()))
        out += buffer.data();
    const int status = pclose(pipe.release());
    return {status == 0, out};
}

} // namespace

TEST(BuildIdentity, IsTheVersionAndTheCommitOfTheCheckout)
{
    const std::string identity = mantissa::buildIdentity();
    std::smatch m;
    ASSERT_TRUE(
        std::regex_match(identity, m, std::regex(R"(([0-9]+\.[0-9]+\.[0-9]+)(\+git\.([0-9a-f]{12})(\.modified)?)?)")))
        << identity;
    EXPECT_EQ(m[1].str(), MANTISSA_VERSION);
    const std::string source = MANTISSA_SOURCE_DIR;
    const Shell head = shell("git -C '" + source + "' rev-parse --verify -q HEAD 2>/dev/null");
    if (!head.ok)
        GTEST_SKIP() << source << " is not a git checkout (or git is missing): the identity is the version alone";
    ASSERT_TRUE(m[2].matched) << "built from a git checkout, yet " << identity << " names no commit";
    // The commit built from is HEAD or, where commits were made since the build, an ancestor.
    EXPECT_TRUE(shell("git -C '" + source + "' merge-base --is-ancestor " + m[3].str() + " HEAD").ok)
        << m[3].str() << " is not HEAD or an ancestor of it in " << source;
}

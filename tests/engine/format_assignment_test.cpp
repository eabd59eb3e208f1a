// The advisor's format assignment (GLPK's 0-1 programme) against every assignment enumerated,
// on small random instances; and the budgets nothing meets, and the inputs it refuses.
#include "engine/advisor/format_assignment.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace mantissa;

namespace {

struct Best {
    double value = -1;
    double loss = std::numeric_limits<double>::infinity();
    bool feasible = false;
};

// Every choice of baseline or one option per layer: the largest value within the budget, and
// the least total loss of all.
Best enumerate(const AssignmentProblem& problem, double& leastLoss)
{
    Best best;
    leastLoss = std::numeric_limits<double>::infinity();
    std::vector<int> choice(problem.layers.size(), -1);
    while (true) {
        double loss = 0, value = 0;
        bool allowed = true;
        for (std::size_t l = 0; l < choice.size(); ++l)
            if (choice[l] >= 0) {
                const FormatOption& o = problem.layers[l][static_cast<std::size_t>(choice[l])];
                allowed = allowed && o.allowed;
                loss += o.lossIncrease;
                value += o.value;
            }
        if (allowed) {
            leastLoss = std::min(leastLoss, loss);
            if (loss <= problem.budget && value > best.value) {
                best = {value, loss, true};
            }
        }
        std::size_t l = 0;
        while (l < choice.size() && ++choice[l] == static_cast<int>(problem.layers[l].size())) {
            choice[l] = -1;
            ++l;
        }
        if (l == choice.size())
            return best;
    }
}

AssignmentProblem randomProblem(std::mt19937& random, std::size_t layers, std::size_t formats)
{
    std::uniform_real_distribution<double> loss(-0.01, 0.2), value(0.0, 1000.0), coin(0.0, 1.0);
    AssignmentProblem problem;
    problem.layers.resize(layers);
    for (auto& options : problem.layers)
        for (std::size_t f = 0; f < formats; ++f)
            options.push_back({loss(random), value(random), coin(random) > 0.15});
    problem.budget = std::uniform_real_distribution<double>(0.0, 0.4)(random);
    return problem;
}

} // namespace

TEST(FormatAssignment, MatchesEveryAssignmentEnumeratedOnRandomInstances)
{
    std::mt19937 random(7);
    for (int instance = 0; instance < 200; ++instance) {
        const AssignmentProblem problem = randomProblem(random, 1 + instance % 7, 1 + instance % 3);
        double leastLoss = 0;
        const Best best = enumerate(problem, leastLoss);
        const Assignment a = assignFormats(problem);
        ASSERT_TRUE(best.feasible); // the all-baseline assignment costs nothing
        ASSERT_TRUE(a.withinBudget) << "instance " << instance;
        EXPECT_NEAR(a.value, best.value, 1e-6 * std::max(1.0, best.value)) << "instance " << instance;
        EXPECT_LE(a.lossIncrease, problem.budget + 1e-9) << "instance " << instance;
        for (std::size_t l = 0; l < a.choice.size(); ++l) {
            if (a.choice[l] >= 0) {
                EXPECT_TRUE(problem.layers[l][static_cast<std::size_t>(a.choice[l])].allowed);
            }
        }
    }
}

TEST(FormatAssignment, ABudgetNothingMeetsGivesTheLeastLossFound)
{
    std::mt19937 random(11);
    for (int instance = 0; instance < 50; ++instance) {
        AssignmentProblem problem = randomProblem(random, 2 + instance % 5, 2);
        problem.budget = -1.0; // below any sum of the losses drawn (each >= -0.01)
        double leastLoss = 0;
        enumerate(problem, leastLoss);
        const Assignment a = assignFormats(problem);
        EXPECT_FALSE(a.withinBudget);
        EXPECT_NEAR(a.lossIncrease, leastLoss, 1e-9) << "instance " << instance;
    }
}

TEST(FormatAssignment, AZeroBudgetTakesOnlyFormatsThatCostNothing)
{
    AssignmentProblem problem;
    problem.layers = {{{0.05, 100}}, {{0.0, 10}}, {{-0.01, 5}, {0.02, 50}}};
    problem.budget = 0;
    const Assignment a = assignFormats(problem);
    EXPECT_TRUE(a.withinBudget);
    EXPECT_EQ(a.choice, (std::vector<int>{-1, 0, 0}));
    EXPECT_DOUBLE_EQ(a.value, 15);
}

TEST(FormatAssignment, RefusesNonFiniteInputs)
{
    AssignmentProblem problem;
    problem.layers = {{{NAN, 1}}};
    EXPECT_THROW(assignFormats(problem), ConfigError);
    problem.layers = {{{0.1, -1}}};
    EXPECT_THROW(assignFormats(problem), ConfigError);
    problem.layers = {{{0.1, 1}}};
    problem.budget = std::numeric_limits<double>::infinity();
    EXPECT_THROW(assignFormats(problem), ConfigError);
}

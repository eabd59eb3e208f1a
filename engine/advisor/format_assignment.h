#pragma once
// The precision advisor's choice (docs/advisor.md): per layer, one of the formats asked for or
// the baseline's, so that the layers put in lower formats weigh the most (their FLOPs or their
// weights' memory, each weighted by what its format saves) while the measured loss increases
// they add up to stay within a budget.
//
// The model is additive: the loss increase of an assignment is taken to be the sum of the
// increases each of its layers caused alone (the probe's). Interactions between layers are not
// modelled; the advisor's verification sweep measures the assignment as a whole.
//
// It is a multiple-choice knapsack, solved exactly as a 0-1 integer programme by GLPK's
// branch and cut (glp_intopt): one binary per layer and format, at most one per layer, one
// budget row.
#include <string>
#include <vector>

namespace mantissa {

struct FormatOption {
    double lossIncrease = 0; // the probe's, for this layer in this format
    double value = 0;        // what putting the layer in this format gains (>= 0)
    bool allowed = true;     // false: the layer cannot take the format (never chosen)
};

struct AssignmentProblem {
    // Per layer, its options; the baseline (no change, no loss, no value) is always possible.
    std::vector<std::vector<FormatOption>> layers;
    double budget = 0; // the largest total loss increase accepted
};

struct Assignment {
    std::vector<int> choice; // per layer: the option's index, or -1 for the baseline
    double lossIncrease = 0; // the sum of the chosen options'
    double value = 0;
    // False when no assignment meets the budget (a negative budget that no set of layers'
    // loss decreases reaches): then `choice` is the one of least total loss increase.
    bool withinBudget = true;
};

// Throws ConfigError for a non-finite budget, loss or value, or a negative value; where GLPK
// itself fails, an Error with its return code.
Assignment assignFormats(const AssignmentProblem& problem);

} // namespace mantissa

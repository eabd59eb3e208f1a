#include "engine/advisor/format_assignment.h"

#include "engine/util/check.h"

#include <glpk.h>

#include <cmath>
#include <memory>

namespace mantissa {

namespace {

struct ProblemDeleter {
    void operator()(glp_prob* p) const { glp_delete_prob(p); }
};
using GlpkProblem = std::unique_ptr<glp_prob, ProblemDeleter>;

void checkInputs(const AssignmentProblem& problem)
{
    if (!std::isfinite(problem.budget))
        throw ConfigError("the loss budget must be a finite number");
    for (std::size_t l = 0; l < problem.layers.size(); ++l)
        for (std::size_t o = 0; o < problem.layers[l].size(); ++o) {
            const FormatOption& option = problem.layers[l][o];
            if (!option.allowed)
                continue;
            if (!std::isfinite(option.lossIncrease) || !std::isfinite(option.value) || option.value < 0)
                throw ConfigError("layer " + std::to_string(l) + ", option " + std::to_string(o) +
                                  ": the loss increase must be finite and the value finite and non-negative (" +
                                  std::to_string(option.lossIncrease) + ", " + std::to_string(option.value) + ")");
        }
}

// Solves the programme: maximise the value within the budget, or (withBudget false) minimise
// the total loss increase with no budget at all. Returns whether GLPK found an optimum.
bool solve(const AssignmentProblem& problem, bool withBudget, Assignment& out)
{
    GlpkProblem lp(glp_create_prob());
    glp_prob* p = lp.get();
    glp_set_obj_dir(p, withBudget ? GLP_MAX : GLP_MIN);
    const int layers = static_cast<int>(problem.layers.size());
    // Rows 1..layers: one choice per layer at most; row layers + 1: the budget.
    glp_add_rows(p, layers + 1);
    for (int l = 1; l <= layers; ++l)
        glp_set_row_bnds(p, l, GLP_UP, 0.0, 1.0);
    if (withBudget)
        glp_set_row_bnds(p, layers + 1, GLP_UP, 0.0, problem.budget);
    else
        glp_set_row_bnds(p, layers + 1, GLP_FR, 0.0, 0.0);
    std::vector<int> rows{0}, columns{0};
    std::vector<double> values{0.0};
    std::vector<std::pair<int, int>> owner; // column -> (layer, option)
    for (int l = 0; l < layers; ++l)
        for (int o = 0; o < static_cast<int>(problem.layers[static_cast<std::size_t>(l)].size()); ++o) {
            const FormatOption& option = problem.layers[static_cast<std::size_t>(l)][static_cast<std::size_t>(o)];
            const int column = glp_add_cols(p, 1);
            owner.emplace_back(l, o);
            glp_set_col_kind(p, column, GLP_BV);
            if (!option.allowed)
                glp_set_col_bnds(p, column, GLP_FX, 0.0, 0.0);
            glp_set_obj_coef(p, column, withBudget ? option.value : option.lossIncrease);
            rows.push_back(l + 1);
            columns.push_back(column);
            values.push_back(1.0);
            rows.push_back(layers + 1);
            columns.push_back(column);
            values.push_back(option.lossIncrease);
        }
    out = Assignment{};
    out.choice.assign(static_cast<std::size_t>(layers), -1);
    if (owner.empty())
        return !withBudget || problem.budget >= 0;
    glp_load_matrix(p, static_cast<int>(rows.size()) - 1, rows.data(), columns.data(), values.data());
    glp_iocp parameters;
    glp_init_iocp(&parameters);
    parameters.presolve = GLP_ON;
    parameters.msg_lev = GLP_MSG_OFF;
    const int code = glp_intopt(p, &parameters);
    if (code == GLP_ENOPFS || code == GLP_ENODFS)
        return false;
    if (code != 0)
        throw Error("GLPK's glp_intopt failed with return code " + std::to_string(code));
    if (glp_mip_status(p) != GLP_OPT)
        return false;
    for (std::size_t c = 0; c < owner.size(); ++c)
        if (glp_mip_col_val(p, static_cast<int>(c) + 1) > 0.5) {
            const auto [l, o] = owner[c];
            out.choice[static_cast<std::size_t>(l)] = o;
        }
    return true;
}

} // namespace

Assignment assignFormats(const AssignmentProblem& problem)
{
    checkInputs(problem);
    glp_term_out(GLP_OFF);
    Assignment best;
    const bool withinBudget = solve(problem, true, best);
    if (!withinBudget && !solve(problem, false, best))
        throw Error("GLPK found no assignment at all");
    best.withinBudget = withinBudget;
    // The totals from the choices, in double: what the budget is held to.
    for (std::size_t l = 0; l < best.choice.size(); ++l)
        if (best.choice[l] >= 0) {
            const FormatOption& option = problem.layers[l][static_cast<std::size_t>(best.choice[l])];
            best.lossIncrease += option.lossIncrease;
            best.value += option.value;
        }
    return best;
}

} // namespace mantissa

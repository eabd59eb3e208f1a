#pragma once
// `mantissa-cli advise --verify SEEDS`: the advised config trained over seeds against the
// baseline and the rules of thumb (engine/advisor/rules_of_thumb.h), as a sweep whose one axis
// is model.precision_overrides. The sweep is `mantissa-cli sweep`'s own (stored, run in worker
// processes, resumed: advising again trains only the missing runs; its spec is written beside
// the output as OUT.verify.json for `mantissa-cli sweep`), and so are its statistics and
// equivalence verdicts, with the configurations named "baseline", "advised" and each rule.
#include "cli/advise_report.h"
#include "engine/config/run_config.h"
#include "report/advice_summary.h"

#include <QCommandLineParser>

#include <string>

namespace mantissa::cli {

struct AdviceVerification {
    int exitCode = 0; // 0 when every run finished or diverged, else 1 (a run failed or was interrupted)
    qint64 sweepId = 0;
    // The sweep's configurations in its order: baseline, advised, then each rule of thumb that
    // differs from them.
    QList<report::AdviceCandidate> candidates;
};

// The rules of thumb put the layers in the first format of table.formats. Prints the table and
// the JSON line (the advice's with the sweep's statistics).
AdviceVerification verifyAdvice(const QCommandLineParser& parser, const RunConfig& baseline, const RunConfig& advised,
                                const AdviceTable& table, int seeds, const std::string& output);

} // namespace mantissa::cli

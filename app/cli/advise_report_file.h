#pragma once
// `mantissa-cli advise --report FILE`: the advice as a report (.pdf, .html or .md), with the
// per-layer sensitivity chart and, when verified, the verification sweep's runs, statistics and
// the advice against the rules of thumb (report/section_advice.cpp).
#include "cli/advise_verify.h"
#include "report/report_writer.h"
#include "sweep/sweep_statistics.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::cli {

// The report format of `path`; throws ConfigError for a suffix an advice's report cannot take.
report::ReportFormat adviceReportFormat(const QString& path);

struct AdviceReportInput {
    QString subject; // what was advised, and at which state
    QString command; // as typed
    QString advisedConfigJson;
    const AdviceVerification* verification = nullptr; // null when not verified
    sweep::EquivalenceMargins margins;
};

// Writes the report; returns the files written (the report first). `store` is read for the
// verification sweep's runs (may be null without verification).
QStringList writeAdviceReport(const QString& path, const AdviceTable& table, const AdviceReportInput& input,
                              const storage::RunStore* store);

} // namespace mantissa::cli

#pragma once
// The sections of a report, in order; each appends its blocks to the document. One file
// per section (section_*.cpp), so that each stays readable on its own.
#include "report/report_data.h"
#include "report/report_document.h"

namespace mantissa::report {

// Title, date, version, and on the first page the notice for runs that did not finish.
void appendOverview(ReportDocument& document, const ReportData& data);
// Machine: this host, and each run's recorded device.
void appendMachine(ReportDocument& document, const ReportData& data);
// Model: the layer table with shapes, parameters, FLOPs and compute precision, and totals.
void appendModel(ReportDocument& document, const ReportData& data);
// Settings: precision, loss scaling, optimizer, schedule, batch size, epochs, seed, data.
void appendSettings(ReportDocument& document, const ReportData& data);
// Results: the summary (one run) or the comparison table and statements, and the epochs.
void appendResults(ReportDocument& document, const ReportData& data);
// Over the seeds (only with ReportData::seeds): the mean curves with their min-max band per
// configuration, the statistics table and the sentence per pair.
void appendSeedStatistics(ReportDocument& document, const ReportData& data);
// Plots: loss, accuracy, loss scale, throughput.
void appendPlots(ReportDocument& document, const ReportData& data);
// Overflows: skipped steps, the first overflows, the parameters that overflowed most.
void appendOverflows(ReportDocument& document, const ReportData& data);
// Shadow error vs fp32 (only for runs with the track): the tensors that erred most against the
// same step in fp32, and every layer at the last shadowed step.
void appendShadowErrors(ReportDocument& document, const ReportData& data);
// Appendix: each run's full config JSON.
void appendAppendix(ReportDocument& document, const ReportData& data);

// All of the above.
ReportDocument buildReportDocument(const ReportData& data);

} // namespace mantissa::report

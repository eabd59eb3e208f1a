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

// A precision advice (ReportData::advice): what was advised, the per-layer sensitivity chart and
// table, the share of the FLOPs in each format; when verified, each configuration's gap to the
// baseline with its interval and the advice against each rule of thumb (section_advice.cpp).
void appendAdvice(ReportDocument& document, const ReportData& data);
// An advice's whole report: the advice, the verification's statistics over the seeds, the
// machine, and the advised config.
ReportDocument buildAdviceDocument(const ReportData& data);

// All of the above; an advice's report when ReportData::advice is set.
ReportDocument buildReportDocument(const ReportData& data);

} // namespace mantissa::report

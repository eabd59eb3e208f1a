#pragma once
// The model section of runs that trained an imported model (model.onnx) rather than a layer
// list: which file (its name and content hash), its nodes, parameters and FLOPs, the precision
// each node ran in and the engine's tensor-core advice for its GEMMs (RunData::modelFile).
#include "report/report_data.h"
#include "report/report_document.h"

namespace mantissa::report {

// Runs that trained the same file (one content hash) share one description.
void appendImportedModel(ReportDocument& document, const QList<const RunData*>& runs);

} // namespace mantissa::report

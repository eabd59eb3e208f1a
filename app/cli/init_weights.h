#pragma once
// `train --init-from RUN|FILE`: where a fine-tune's initial weights come from. A stored run
// (id or name) gives its latest checkpoint, any other value is a checkpoint file. The result
// goes into training.init_from, so the new run's stored config says where its weights came
// from; the trainer loads them (weights only: the optimizer and the loss scaler start fresh).
#include "storage/run_store.h"

#include <QString>

namespace mantissa::cli {

struct InitialWeights {
    QString path;        // absolute checkpoint file
    QString description; // "run 3 (tiny-fp32-1), epoch 2, step 32" or the file itself
};

// Throws StorageError naming `value`: no such run or file (NotFound), a run without a
// checkpoint or whose checkpoint file is gone (NotFound).
InitialWeights resolveInitialWeights(const storage::RunStore& store, const QString& value);

} // namespace mantissa::cli

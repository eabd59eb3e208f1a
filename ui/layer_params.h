#pragma once
// The "parameters" cell of the layer table: the fields that matter for a layer's type as
// "units=1024, activation=relu", editable as text. One text cell keeps the table narrow
// while still letting every field be edited in place.
#include "engine/config/run_config.h"

#include <QString>
#include <QStringList>

namespace mantissa::ui {

// The keys shown and accepted for a layer type, in display order (the engine's layerFields).
QStringList layerParamKeys(LayerKind type);

QString formatLayerParams(const LayerSpec& layer);

// Applies "key=value, key=value" to `layer`. Keys left out keep their value. Returns an
// empty string on success, else a message naming the key and what is expected.
QString parseLayerParams(const QString& text, LayerSpec& layer);

// A layer of `type` with sensible defaults (what "Add layer" inserts).
LayerSpec defaultLayer(LayerKind type);

} // namespace mantissa::ui

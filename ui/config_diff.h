#pragma once
// The settings in which run configs differ, as dotted JSON paths ("precision.mode",
// "model.layers[2].precision"), for the comparison view: showing only what differs is what
// makes a comparison of two long configs readable.
#include <QList>
#include <QString>
#include <QStringList>

namespace mantissa::ui {

struct ConfigDifference {
    QString key;        // "optimizer.lr"
    QStringList values; // one per config, "" where the key is absent
};

// Compares configs given as JSON text (runConfigToJson). Keys in sorted order. A single
// process's config counts as distributed.world_size 1 with no all-reduce, so that it differs
// from an N-rank run's in those three keys.
QList<ConfigDifference> diffConfigs(const QStringList& configJsons);

} // namespace mantissa::ui

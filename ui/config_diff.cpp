#include "ui/config_diff.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>

#include <map>

namespace mantissa::ui {

namespace {

void flatten(const QJsonValue& value, const QString& path, std::map<QString, QString>& out)
{
    if (value.isObject()) {
        const QJsonObject object = value.toObject();
        for (auto it = object.begin(); it != object.end(); ++it)
            flatten(it.value(), path.isEmpty() ? it.key() : path + "." + it.key(), out);
        return;
    }
    if (value.isArray()) {
        const QJsonArray array = value.toArray();
        // Arrays of scalars (shapes, milestones) read best on one line.
        bool scalars = true;
        for (const QJsonValue& v : array)
            scalars = scalars && !v.isObject() && !v.isArray();
        if (scalars) {
            out[path] = QString::fromUtf8(QJsonDocument(array).toJson(QJsonDocument::Compact));
            return;
        }
        for (qsizetype i = 0; i < array.size(); ++i)
            flatten(array[i], path + "[" + QString::number(i) + "]", out);
        return;
    }
    if (value.isDouble())
        out[path] = QString::number(value.toDouble(), 'g', 7);
    else if (value.isBool())
        out[path] = value.toBool() ? "true" : "false";
    else if (value.isString())
        out[path] = value.toString();
    else
        out[path] = "null";
}

// A single process's config has no distributed section (or world_size 0: as launched, which was
// one process when it was recorded). Its world size is 1 and it has no all-reduce, which is
// what a comparison with an N-rank run must show rather than blank cells, or equal defaults.
void fillSingleProcess(std::map<QString, QString>& flat)
{
    const auto worldSize = flat.find(QStringLiteral("distributed.world_size"));
    if (worldSize != flat.end() && worldSize->second != QStringLiteral("0"))
        return;
    const QString none = QObject::tr("none (1 process)");
    flat[QStringLiteral("distributed.world_size")] = QStringLiteral("1");
    flat[QStringLiteral("distributed.allreduce_dtype")] = none;
    flat[QStringLiteral("distributed.reduction")] = none;
    flat[QStringLiteral("distributed.batch_norm")] = none;
}

} // namespace

QList<ConfigDifference> diffConfigs(const QStringList& configJsons)
{
    std::vector<std::map<QString, QString>> flat(static_cast<std::size_t>(configJsons.size()));
    std::map<QString, int> keys;
    for (qsizetype i = 0; i < configJsons.size(); ++i) {
        flatten(QJsonDocument::fromJson(configJsons[i].toUtf8()).object(), QString(),
                flat[static_cast<std::size_t>(i)]);
        fillSingleProcess(flat[static_cast<std::size_t>(i)]);
        for (const auto& [key, value] : flat[static_cast<std::size_t>(i)])
            keys[key] = 0;
    }
    QList<ConfigDifference> result;
    for (const auto& [key, unused] : keys) {
        ConfigDifference d{key, {}};
        for (const auto& f : flat) {
            const auto it = f.find(key);
            d.values << (it == f.end() ? QString() : it->second);
        }
        if (d.values.count(d.values.first()) != d.values.size())
            result << d;
    }
    return result;
}

} // namespace mantissa::ui

#include "storage/run_export.h"

#include "storage/run_store.h"
#include "storage/storage_error.h"

#include <QBuffer>
#include <QFileDevice>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <charconv>
#include <cmath>

namespace mantissa::storage {

namespace {

enum class Syntax { Csv, Json };

// Buffers output and hands it to the device in large writes.
class Sink {
public:
    Sink(QIODevice& device, const RunStore& store) : m_device(device), m_store(store) {}
    ~Sink() = default;

    Sink& operator<<(const char* text)
    {
        m_buffer.append(text);
        return spill();
    }
    Sink& operator<<(const QByteArray& text)
    {
        m_buffer.append(text);
        return spill();
    }
    Sink& operator<<(char c)
    {
        m_buffer.append(c);
        return spill();
    }

    // Shortest round-trip text of a value that was a float before it was stored.
    Sink& number(double value, bool isFloat, Syntax syntax)
    {
        if (std::isnan(value))
            return *this << (syntax == Syntax::Json ? "null" : "");
        if (std::isinf(value)) {
            if (syntax == Syntax::Json)
                return *this << "null";
            return *this << (value > 0 ? "inf" : "-inf");
        }
        char text[32];
        const auto result = isFloat ? std::to_chars(text, text + sizeof text, float(value))
                                    : std::to_chars(text, text + sizeof text, value);
        m_buffer.append(text, result.ptr - text);
        return spill();
    }

    Sink& integer(qint64 value)
    {
        m_buffer.append(QByteArray::number(value));
        return spill();
    }

    void finish() { write(); }

private:
    Sink& spill()
    {
        if (m_buffer.size() >= 1 << 16)
            write();
        return *this;
    }

    void write()
    {
        if (m_buffer.isEmpty())
            return;
        if (m_device.write(m_buffer) != m_buffer.size()) {
            const auto* file = qobject_cast<QFileDevice*>(&m_device);
            throw StorageError(StorageError::Kind::Io, file ? file->fileName() : m_store.path(),
                               QStringLiteral("cannot write the export: %1").arg(m_device.errorString()));
        }
        m_buffer.clear();
    }

    QIODevice& m_device;
    const RunStore& m_store;
    QByteArray m_buffer;
};

struct Column {
    const char* name;
    bool isFloat; // stored from a float: printed as the float it was
};

const Column kStepColumns[] = {
    {"step", false},           {"epoch", false},   {"loss", true},      {"learning_rate", true},
    {"loss_scale", true},      {"skipped", false}, {"grad_norm", true}, {"samples_per_second", true},
    {"elapsed_seconds", false}};
const Column kEpochColumns[] = {{"epoch", false},          {"train_loss", true},         {"train_accuracy", true},
                                {"test_loss", true},       {"test_accuracy", true},      {"wall_seconds", false},
                                {"validation_loss", true}, {"validation_accuracy", true}};

double stepValue(const StepSeries& s, int column, qsizetype row)
{
    switch (column) {
    case 0: return s.step[row];
    case 1: return s.epoch[row];
    case 2: return s.loss[row];
    case 3: return s.learningRate[row];
    case 4: return s.lossScale[row];
    case 5: return s.skipped[row] ? 1 : 0;
    case 6: return s.gradNorm[row];
    case 7: return s.samplesPerSecond[row];
    default: return s.elapsedSeconds[row];
    }
}

double epochValue(const EpochRecord& e, int column)
{
    switch (column) {
    case 0: return e.epoch;
    case 1: return e.trainLoss;
    case 2: return e.trainAccuracy;
    case 3: return e.testLoss;
    case 4: return e.testAccuracy;
    case 5: return e.wallSeconds;
    case 6: return e.validationLoss;
    default: return e.validationAccuracy;
    }
}

// Rows as CSV lines or as JSON objects, one per line; `value(row, column)`.
template <std::size_t N, typename Value>
void writeRows(Sink& sink, const Column (&columns)[N], qsizetype rows, Syntax syntax, Value value)
{
    if (syntax == Syntax::Csv) {
        for (std::size_t c = 0; c < N; ++c)
            sink << (c ? "," : "") << columns[c].name;
        sink << '\n';
    }
    for (qsizetype row = 0; row < rows; ++row) {
        if (syntax == Syntax::Json)
            sink << (row ? ",\n{" : "\n{");
        for (std::size_t c = 0; c < N; ++c) {
            if (syntax == Syntax::Json)
                sink << (c ? ",\"" : "\"") << columns[c].name << "\":";
            else if (c)
                sink << ',';
            sink.number(value(row, int(c)), columns[c].isFloat, syntax);
        }
        sink << (syntax == Syntax::Json ? "}" : "\n");
    }
}

void writeStepRows(Sink& sink, const StepSeries& steps, Syntax syntax)
{
    writeRows(sink, kStepColumns, steps.size(), syntax,
              [&](qsizetype row, int column) { return stepValue(steps, column, row); });
}

void writeEpochRows(Sink& sink, const QList<EpochRecord>& epochs, Syntax syntax)
{
    writeRows(sink, kEpochColumns, epochs.size(), syntax,
              [&](qsizetype row, int column) { return epochValue(epochs[row], column); });
}

QJsonValue optionalJson(const std::optional<double>& value)
{
    return value && std::isfinite(*value) ? QJsonValue(*value) : QJsonValue();
}

QJsonValue optionalJson(const std::optional<qint64>& value) { return value ? QJsonValue(*value) : QJsonValue(); }

QString jsonTime(const QDateTime& time) { return time.isValid() ? time.toString(Qt::ISODateWithMs) : QString(); }

QJsonObject runJson(const RunInfo& run)
{
    const StoredSummary& s = run.summary;
    QJsonObject summary{{"final_train_loss", optionalJson(s.finalTrainLoss)},
                        {"best_test_accuracy", optionalJson(s.bestTestAccuracy)},
                        {"final_test_accuracy", optionalJson(s.finalTestAccuracy)},
                        {"final_test_loss", optionalJson(s.finalTestLoss)},
                        {"best_test_loss", optionalJson(s.bestTestLoss)},
                        {"steps", optionalJson(s.steps)},
                        {"skipped_steps", optionalJson(s.skippedSteps)},
                        {"final_loss_scale", optionalJson(s.finalLossScale)},
                        {"samples_per_second", optionalJson(s.samplesPerSecond)}};
    // The config is embedded as JSON when it parses, as text otherwise.
    const QJsonDocument config = QJsonDocument::fromJson(run.configJson.toUtf8());
    return QJsonObject{
        {"id", run.id},
        {"name", run.name},
        {"status", QString::fromLatin1(runStatusName(run.status))},
        {"created_at", jsonTime(run.createdAt)},
        {"finished_at", run.finishedAt.isValid() ? QJsonValue(jsonTime(run.finishedAt)) : QJsonValue()},
        {"preset", run.preset},
        {"precision", run.precision},
        {"device", run.device},
        {"engine_version", run.engineVersion},
        {"tags", QJsonArray::fromStringList(run.tags)},
        {"notes", run.notes},
        {"group_id", optionalJson(run.groupId)},
        {"wall_seconds", optionalJson(run.wallSeconds)},
        {"peak_memory_bytes", optionalJson(run.peakMemoryBytes)},
        {"summary", summary},
        {"error_message", run.errorMessage},
        {"config", config.isObject() ? QJsonValue(config.object()) : QJsonValue(run.configJson)},
    };
}

QJsonArray eventsJson(const QList<EventRecord>& events)
{
    QJsonArray array;
    for (const EventRecord& e : events) {
        const bool scaled = e.kind == EventKind::Overflow || e.kind == EventKind::ScaleChange;
        array.append(QJsonObject{{"kind", eventKindName(e.kind)},
                                 {"step", qint64(e.step)},
                                 {"scale_before", scaled ? QJsonValue(double(e.scaleBefore)) : QJsonValue()},
                                 {"scale_after", scaled ? QJsonValue(double(e.scaleAfter)) : QJsonValue()},
                                 {"parameter", QString::fromStdString(e.parameter)},
                                 {"message", QString::fromStdString(e.message)}});
    }
    return array;
}

} // namespace

void writeCsv(const RunStore& store, qint64 runId, ExportTable table, QIODevice& out)
{
    Sink sink(out, store);
    if (table == ExportTable::Steps)
        writeStepRows(sink, store.steps(runId), Syntax::Csv);
    else
        writeEpochRows(sink, store.epochs(runId), Syntax::Csv);
    sink.finish();
}

QByteArray exportCsv(const RunStore& store, qint64 runId, ExportTable table)
{
    QByteArray text;
    QBuffer buffer(&text);
    buffer.open(QIODevice::WriteOnly);
    writeCsv(store, runId, table, buffer);
    return text;
}

void writeJson(const RunStore& store, qint64 runId, QIODevice& out)
{
    const RunInfo run = store.run(runId);
    Sink sink(out, store);
    sink << "{\n\"run\": " << QJsonDocument(runJson(run)).toJson(QJsonDocument::Compact);
    sink << ",\n\"steps\": [";
    writeStepRows(sink, store.steps(runId), Syntax::Json);
    sink << "\n],\n\"epochs\": [";
    writeEpochRows(sink, store.epochs(runId), Syntax::Json);
    sink << "\n],\n\"events\": " << QJsonDocument(eventsJson(store.events(runId))).toJson(QJsonDocument::Compact)
         << "\n}\n";
    sink.finish();
}

QByteArray exportJson(const RunStore& store, qint64 runId)
{
    QByteArray text;
    QBuffer buffer(&text);
    buffer.open(QIODevice::WriteOnly);
    writeJson(store, runId, buffer);
    return text;
}

} // namespace mantissa::storage

#include "storage/connection.h"
#include "storage/run_store.h"

#include <QSqlQuery>

namespace mantissa::storage {

std::vector<ShadowRecord> RunStore::shadowRecords(qint64 runId, qint64 afterStep) const
{
    requireRun(runId);
    const QString what = QStringLiteral("reading the shadow errors of run %1").arg(runId);
    QSqlQuery steps = m_connection->prepare(
        QStringLiteral("SELECT step, loss_scale FROM shadow_steps WHERE run_id = ? AND step > ? ORDER BY step"));
    steps.setForwardOnly(true);
    steps.addBindValue(runId);
    steps.addBindValue(afterStep);
    m_connection->exec(steps, what);
    std::vector<ShadowRecord> records;
    while (steps.next()) {
        ShadowRecord r;
        r.step = steps.value(0).toLongLong();
        r.lossScale = steps.value(1).toFloat();
        records.push_back(std::move(r));
    }
    QSqlQuery rows = m_connection->prepare(
        QStringLiteral("SELECT step, layer, kind, tensor, elements, non_finite, reference_energy, compared_energy, "
                       "error_energy, dot FROM shadow_errors WHERE run_id = ? AND step > ? ORDER BY step, ordinal"));
    rows.setForwardOnly(true);
    rows.addBindValue(runId);
    rows.addBindValue(afterStep);
    m_connection->exec(rows, what);
    std::size_t at = 0;
    while (rows.next()) {
        const qint64 step = rows.value(0).toLongLong();
        while (at < records.size() && records[at].step < step)
            ++at;
        if (at == records.size() || records[at].step != step)
            continue; // a row without its step (written between the two reads): taken next time
        ShadowError e;
        e.layer = rows.value(1).toString().toStdString();
        const std::optional<ShadowTensor> kind = parseShadowTensor(rows.value(2).toString().toStdString());
        if (!kind)
            continue; // the table's CHECK admits no other
        e.kind = *kind;
        e.tensor = rows.value(3).toString().toStdString();
        e.energies.count = rows.value(4).toLongLong();
        e.energies.nonFinite = rows.value(5).toLongLong();
        e.energies.reference = rows.value(6).toDouble();
        e.energies.compared = rows.value(7).toDouble();
        e.energies.error = rows.value(8).toDouble();
        e.energies.dot = rows.value(9).toDouble();
        records[at].errors.push_back(std::move(e));
    }
    return records;
}

} // namespace mantissa::storage

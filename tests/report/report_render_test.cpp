// Every format, rendered for one run, for the comparison and for an interrupted run, then
// read back: the PDF through pdftotext (section titles, precision modes, accuracies from
// the database, the interrupted notice on page 1), the HTML for inline images and no
// external reference, the Markdown for PNG files that exist, the CSV row by row.
#include "report/report_data.h"
#include "report/report_format.h"
#include "report/report_writer.h"
#include "synthetic_runs.h"

#include <QApplication>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <memory>

using namespace mantissa;
using namespace mantissa::report;
using namespace mantissa::report::test;

namespace {

QByteArray readAll(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class ReportRenderTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_sample = writeSampleDatabase(m_dir.filePath(QStringLiteral("runs.sqlite")));
        m_store = std::make_unique<storage::RunStore>(m_sample.path);
    }

    void formatFollowsTheSuffix()
    {
        QCOMPARE(reportFormatForPath("a/b.PDF"), ReportFormat::Pdf);
        QCOMPARE(reportFormatForPath("r.htm"), ReportFormat::Html);
        QCOMPARE(reportFormatForPath("r.md"), ReportFormat::Markdown);
        QCOMPARE(reportFormatForPath("r.csv"), ReportFormat::Csv);
        QVERIFY(!reportFormatForPath("r.docx"));
        QVERIFY(!reportFormatForPath("report"));
    }

    void pdf_data() { addRunSets(); }
    void pdf()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty())
            QSKIP("pdftotext (poppler-utils) is not installed: scripts/setup installs it");
        const ReportData data = load();
        const QString path = m_dir.filePath(QString::fromLatin1(QTest::currentDataTag()).replace(' ', '-') + ".pdf");
        QCOMPARE(writeReport(*m_store, data, path, ReportFormat::Pdf), QStringList{path});
        QVERIFY(readAll(path).startsWith("%PDF-"));

        const QString text = pdfText(path);
        for (const char* section : {"Machine", "Model", "Settings", "Results", "Plots", "Overflow summary",
                                    "Appendix: run configuration", "Loss scale", "Accuracy", "Throughput"}) {
            if (QLatin1String(section) == QLatin1String("Loss scale") && !hasLossScaling(data))
                continue;
            QVERIFY2(text.contains(QLatin1String(section)), section);
        }
        for (const RunData& run : data.runs) {
            QVERIFY2(text.contains(run.info.name), qPrintable(run.info.name));
            QVERIFY2(text.contains(run.precision()), qPrintable(run.precision()));
            // The final accuracy as the database has it, and every epoch's.
            QVERIFY(run.info.summary.finalTestAccuracy || run.isIncomplete());
            for (const EpochRecord& epoch : m_store->epochs(run.info.id)) {
                const QString accuracy = formatPercent(epoch.testAccuracy, 2);
                QVERIFY2(text.contains(accuracy), qPrintable(accuracy));
            }
        }
        // Axis labels are text too: the plots are vectors, not pictures.
        QVERIFY(text.contains(QStringLiteral("samples/s")));
        QVERIFY(text.contains(QStringLiteral("epoch")));
        QVERIFY(!text.contains(QChar(0xFB01)) && !text.contains(QChar(0xFB02))); // no fi/fl ligatures
        // Each config's lines once, though the appendix flows across pages: a line on a page
        // edge is drawn on one page only.
        QCOMPARE(text.count(QStringLiteral("\"eval_batch_size\"")), data.runs.size());
        QCOMPARE(text.count(QStringLiteral("\"training\": {")), data.runs.size());

        const QString firstPage = pdfText(path, 1);
        const bool interrupted = data.runs.last().info.status == storage::RunStatus::Interrupted;
        QCOMPARE(firstPage.contains(QStringLiteral("was interrupted")), interrupted);
        if (data.isComparison()) {
            QVERIFY(text.contains(QStringLiteral("Speedup")));
            QVERIFY(text.simplified().contains(QStringLiteral("skipped steps")));
        }
    }

    void html_data() { addRunSets(); }
    void html()
    {
        const ReportData data = load();
        const QString path = m_dir.filePath(QString::fromLatin1(QTest::currentDataTag()).replace(' ', '-') + ".html");
        QCOMPARE(writeReport(*m_store, data, path, ReportFormat::Html), QStringList{path});
        const QString html = QString::fromUtf8(readAll(path));
        QVERIFY(html.startsWith(QStringLiteral("<!DOCTYPE html>")));
        QVERIFY(html.contains(QStringLiteral("<style>")));

        static const QRegularExpression image(QStringLiteral("<img src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\""));
        int images = 0;
        for (QRegularExpressionMatchIterator it = image.globalMatch(html); it.hasNext(); ++images) {
            const QImage decoded = QImage::fromData(QByteArray::fromBase64(it.next().captured(1).toLatin1()), "PNG");
            QVERIFY(!decoded.isNull());
            QVERIFY(decoded.width() >= 860);
        }
        QCOMPARE(images, hasLossScaling(data) ? 4 : 3);
        // Self-contained: nothing is fetched from anywhere.
        static const QRegularExpression external(
            QStringLiteral("<link|<script|<iframe|\\bsrc=\"(?!data:)|\\bhref=|url\\(|@import"),
            QRegularExpression::CaseInsensitiveOption);
        QVERIFY2(!external.match(html).hasMatch(), qPrintable(external.match(html).captured()));
        for (const RunData& run : data.runs)
            QVERIFY(html.contains(formatPercent(run.finalTestAccuracy(), 2)));
    }

    void markdown_data() { addRunSets(); }
    void markdown()
    {
        const ReportData data = load();
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("report.md"));
        const QStringList files = writeReport(*m_store, data, path, ReportFormat::Markdown);
        QCOMPARE(files.first(), path);
        const QString text = QString::fromUtf8(readAll(path));
        QVERIFY(text.startsWith(QStringLiteral("# Mantissa")));
        QVERIFY(text.contains(QStringLiteral("## Overflow summary")));
        QVERIFY(text.contains(QStringLiteral("```json")));
        static const QRegularExpression link(QStringLiteral("!\\[[^\\]]*\\]\\(([^)]+\\.png)\\)"));
        QStringList linked;
        for (QRegularExpressionMatchIterator it = link.globalMatch(text); it.hasNext();) {
            const QString file = it.next().captured(1);
            QVERIFY2(!QImage(dir.filePath(file)).isNull(), qPrintable(file));
            linked << dir.filePath(file);
        }
        QCOMPARE(linked.size(), hasLossScaling(data) ? 4 : 3);
        QCOMPARE(files.mid(1), linked);
        // Pipe tables: the results table has a header rule with right-aligned numbers.
        QVERIFY(text.contains(QStringLiteral("| ---: |")));
    }

    // A run with the shadow error track gets the Numerics tab's heatmap beside its tables, one per
    // kind of tensor the track holds (here outputs and weight gradients, no input gradients), in
    // each format that draws plots; a run without the track gets none.
    void aShadowedRunsReportDrawsItsHeatmaps()
    {
        const QString path = m_dir.filePath(QStringLiteral("shadow.sqlite"));
        SyntheticRun shadowed;
        shadowed.name = QStringLiteral("shadowed");
        shadowed.epochs = 1;
        shadowed.shadowEvery = 20;
        SyntheticRun plain = shadowed;
        plain.name = QStringLiteral("plain");
        plain.shadowEvery = 0;
        const qint64 withTrack = writeSyntheticRun(path, shadowed), without = writeSyntheticRun(path, plain);
        storage::RunStore store(path);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());

        // HTML: the images by their alt text.
        const auto htmlImages = [&](qint64 id) {
            const QString file = dir.filePath(QStringLiteral("run-%1.html").arg(id));
            writeReport(store, loadReportData(store, {id}), file, ReportFormat::Html);
            static const QRegularExpression image(
                QStringLiteral("<img src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\" alt=\"([^\"]*)\""));
            QMap<QString, QImage> images;
            for (QRegularExpressionMatchIterator it = image.globalMatch(QString::fromUtf8(readAll(file)));
                 it.hasNext();) {
                const QRegularExpressionMatch m = it.next();
                images.insert(m.captured(2), QImage::fromData(QByteArray::fromBase64(m.captured(1).toLatin1()), "PNG"));
            }
            return images;
        };
        const QMap<QString, QImage> plainImages = htmlImages(without);
        const QMap<QString, QImage> shadowImages = htmlImages(withTrack);
        QCOMPARE(plainImages.size(), 3); // loss, accuracy, throughput
        for (const QString& title : plainImages.keys())
            QVERIFY2(!title.startsWith(QStringLiteral("Shadow error")), qPrintable(title));
        const QString label = loadReportData(store, {withTrack}).runs.front().label;
        const QString outputs = QStringLiteral("Shadow error of the outputs: ") + label;
        const QString weightGrads = QStringLiteral("Shadow error of the weight gradients: ") + label;
        QCOMPARE(shadowImages.size(), 5);
        QVERIFY2(shadowImages.contains(outputs) && shadowImages.contains(weightGrads),
                 qPrintable(shadowImages.keys().join(u'|')));
        // Coloured as the Numerics tab colours it: the output that held an infinity at step 40 is
        // the blue of a non-finite cell, which no weight gradient is.
        const auto countOf = [](const QImage& image, QColor colour) {
            int n = 0;
            const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
            for (int y = 0; y < rgb.height(); ++y)
                for (int x = 0; x < rgb.width(); ++x)
                    n += rgb.pixelColor(x, y) == colour;
            return n;
        };
        const QColor nonFinite(40, 110, 255);
        QVERIFY(shadowImages[outputs].width() >= 860);
        QVERIFY2(countOf(shadowImages[outputs], nonFinite) > 100, "no non-finite cell drawn");
        QCOMPARE(countOf(shadowImages[weightGrads], nonFinite), 0);

        // Markdown links each heatmap as a PNG file beside the report.
        const QString markdown = dir.filePath(QStringLiteral("shadowed.md"));
        const QStringList files =
            writeReport(store, loadReportData(store, {withTrack}), markdown, ReportFormat::Markdown);
        for (const char* name : {"shadowed-shadow-output-run-1.png", "shadowed-shadow-weight-grad-run-1.png"}) {
            QVERIFY2(files.contains(dir.filePath(QLatin1String(name))), name);
            QVERIFY2(QString::fromUtf8(readAll(markdown)).contains(QStringLiteral("](%1)").arg(QLatin1String(name))),
                     name);
            QVERIFY(!QImage(dir.filePath(QLatin1String(name))).isNull());
        }
        const QString plainMarkdown = dir.filePath(QStringLiteral("plain.md"));
        for (const QString& file :
             writeReport(store, loadReportData(store, {without}), plainMarkdown, ReportFormat::Markdown))
            QVERIFY2(!file.contains(QStringLiteral("shadow")), qPrintable(file));

        // The PDF draws them too: their captions are on the page.
        if (QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty())
            QSKIP("pdftotext (poppler-utils) is not installed: scripts/setup installs it");
        const QString pdf = dir.filePath(QStringLiteral("shadowed.pdf"));
        writeReport(store, loadReportData(store, {withTrack}), pdf, ReportFormat::Pdf);
        const QString text = pdfText(pdf).simplified();
        QCOMPARE(text.count(QStringLiteral("log10 of one tensor's relative RMS error")), 2);
        const QString plainPdf = dir.filePath(QStringLiteral("plain.pdf"));
        writeReport(store, loadReportData(store, {without}), plainPdf, ReportFormat::Pdf);
        QVERIFY(!pdfText(plainPdf).simplified().contains(QStringLiteral("log10 of one tensor's relative RMS error")));
    }

    void csv_data() { addRunSets(); }
    void csv()
    {
        const ReportData data = load();
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rows.csv"));
        const QStringList files = writeReport(*m_store, data, path, ReportFormat::Csv);
        QCOMPARE(files, (QStringList{path, dir.filePath(QStringLiteral("rows-epochs.csv"))}));

        QList<QByteArray> lines = readAll(path).split('\n');
        QVERIFY(lines.last().isEmpty());
        lines.removeLast();
        QCOMPARE(lines.first(), QByteArray("run_id,run,step,epoch,loss,learning_rate,loss_scale,skipped,grad_norm,"
                                           "samples_per_second,elapsed_seconds"));
        qsizetype expected = 0;
        for (const RunData& run : data.runs) {
            const storage::StepSeries steps = m_store->steps(run.info.id);
            expected += steps.size();
            const QByteArray prefix = QByteArray::number(run.info.id) + ',' + run.info.name.toUtf8() + ',';
            qsizetype rows = 0;
            for (const QByteArray& line : lines)
                rows += line.startsWith(prefix);
            QCOMPARE(rows, steps.size()); // one row per stored step
            const auto first =
                std::find_if(lines.cbegin(), lines.cend(), [&](const QByteArray& l) { return l.startsWith(prefix); });
            QVERIFY(first->startsWith(prefix + "1,1,")); // step 1 of epoch 1 comes first
        }
        QCOMPARE(lines.size() - 1, expected);

        QList<QByteArray> epochs = readAll(files[1]).split('\n');
        epochs.removeAll(QByteArray());
        QCOMPARE(epochs.first(),
                 QByteArray("run_id,run,epoch,train_loss,train_accuracy,test_loss,test_accuracy,wall_seconds,"
                            "validation_loss,validation_accuracy"));
        qsizetype epochRows = 0;
        for (const RunData& run : data.runs)
            epochRows += m_store->epochs(run.info.id).size();
        QCOMPARE(epochs.size() - 1, epochRows);
    }

    // A run just created (no rows yet) whose stored config no longer parses: every format
    // still renders, says the run is running and why the layer table is missing.
    void rendersARunWithoutRowsOrConfig()
    {
        storage::NewRun created;
        created.name = QStringLiteral("bare-run");
        created.configJson = QStringLiteral("{\"model\": not json");
        created.precision = QStringLiteral("fp16");
        const qint64 id = m_store->createRun(created);
        const ReportData data = loadReportData(*m_store, {id});
        QVERIFY(!data.runs.first().config);
        QTemporaryDir dir;
        for (ReportFormat format : {ReportFormat::Pdf, ReportFormat::Html, ReportFormat::Markdown, ReportFormat::Csv}) {
            const QString path = dir.filePath(QStringLiteral("bare.%1").arg(int(format)));
            QVERIFY(!writeReport(*m_store, data, path, format).isEmpty());
            QVERIFY(QFileInfo(path).size() > 0);
        }
        if (QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty())
            QSKIP("pdftotext (poppler-utils) is not installed: scripts/setup installs it");
        const QString firstPage = pdfText(dir.filePath(QStringLiteral("bare.%1").arg(int(ReportFormat::Pdf))), 1);
        QVERIFY(firstPage.contains(QStringLiteral("is still running")));
        QVERIFY(pdfText(dir.filePath(QStringLiteral("bare.%1").arg(int(ReportFormat::Pdf))))
                    .simplified()
                    .contains(QStringLiteral("does not parse")));
    }

    // A language model's report gives its losses in bits per character (loss / ln 2): the epoch
    // plot, a column of the epoch table and a line of the results; a classifier's has none of it.
    void aTextRunsReportIsInBitsPerCharacter()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString db = dir.filePath(QStringLiteral("text.sqlite"));
        SyntheticRun spec;
        spec.name = QStringLiteral("char-gpt-fp32");
        spec.text = true;
        const qint64 id = writeSyntheticRun(db, spec);
        storage::RunStore store(db);
        const ReportData data = loadReportData(store, {id});
        QVERIFY(data.reportsBitsPerCharacter());
        const QString path = dir.filePath(QStringLiteral("report.md"));
        writeReport(store, data, path, ReportFormat::Markdown);
        const QString text = QString::fromUtf8(readAll(path));
        // The synthetic test loss after epoch 3 is 0.33 + 0.25 / 3 nats = 0.5967 bits.
        const QString last = QString::number((0.33 + 0.25 / 3) / std::log(2.0), 'f', 3);
        QVERIFY2(text.contains(QStringLiteral("| Final test bits per character | %1 |").arg(last)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Test bits/char")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("in bits per character (loss / ln 2)")), qPrintable(text));
        const ReportData images = loadReportData(*m_store, {m_sample.fp32});
        QVERIFY(!images.reportsBitsPerCharacter());
        // Mixed text and image runs share one epoch axis in percent.
        ReportData mixed;
        mixed.runs = {data.runs.first(), images.runs.first()};
        QVERIFY(!mixed.reportsBitsPerCharacter());
    }

    // A 1-rank against a 2-rank run: the world size in the overview and the settings (named
    // among the settings that differ), each rank's throughput, and the rank each overflow of the
    // data-parallel run started on.
    void aDataParallelRunIsReportedWithItsRanks()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString db = dir.filePath(QStringLiteral("ranks.sqlite"));
        SyntheticRun single;
        single.name = QStringLiteral("mlp-1-rank");
        single.precision = QStringLiteral("mixed-fp16");
        single.epochs = 1;
        SyntheticRun pair = single;
        pair.name = QStringLiteral("mlp-2-ranks");
        pair.worldSize = 2;
        pair.samplesPerSecond = 12000;
        const qint64 one = writeSyntheticRun(db, single), two = writeSyntheticRun(db, pair);
        storage::RunStore store(db);
        const ReportData data = loadReportData(store, {one, two});
        QCOMPARE(data.runs[1].ranks.size(), 2);
        const QString path = dir.filePath(QStringLiteral("report.md"));
        writeReport(store, data, path, ReportFormat::Markdown);
        const QString text = QString::fromUtf8(readAll(path));
        QVERIFY2(text.contains(QStringLiteral("| Ranks |")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("| Data parallel | 1 process | 2 ranks, all-reduce in fp32, "
                                              "sum-then-divide, batch norm per-rank |")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("differ in: data parallel")), qPrintable(text));
        // rank 1 at 12000 / 2 / 1.1 samples/s, 20% of its time in all-reduces.
        QVERIFY2(text.contains(QStringLiteral("| mlp-2-ranks | 1 | 5,455 |")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("All-reduce share")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("| First rank |")), qPrintable(text));
        // Overflows at steps 1, 2 and 3 start on ranks 1, 0 and 1.
        QVERIFY2(text.contains(QRegularExpression(QStringLiteral("\\| 2 \\|[^\\n]*\\| 0 \\|\\n"))), qPrintable(text));
    }

    // The machine section's "16-bit kernels" column gives what each run recorded of its kernel
    // paths, one line after the other, and a dash for a run that recorded none (a GPU run, or
    // one recorded before the kernels were).
    void theKernelColumnShowsEachRunsRecordedKernels()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString db = dir.filePath(QStringLiteral("kernels.sqlite"));
        SyntheticRun native;
        native.name = QStringLiteral("mlp-native");
        native.precision = QStringLiteral("mixed-fp16");
        native.epochs = 1;
        const QStringList lines{
            QStringLiteral("bf16: native: oneDNN avx512_core_bf16, bf16 products accumulated in fp32"),
            QStringLiteral("fp16: emulated: fp16 widened to fp32, oneDNN fp32 kernels (no avx512_fp16)"),
            QStringLiteral("oneDNN kernels used: bf16 matmul: brg:avx512_core_bf16")};
        native.kernels = lines.join(u'\n');
        SyntheticRun unknown = native;
        unknown.name = QStringLiteral("mlp-unrecorded");
        unknown.kernels.clear();
        const qint64 a = writeSyntheticRun(db, native), b = writeSyntheticRun(db, unknown);
        storage::RunStore store(db);
        const ReportData data = loadReportData(store, {a, b});
        QCOMPARE(data.runs[0].info.kernels, native.kernels);
        const QString path = dir.filePath(QStringLiteral("report.md"));
        writeReport(store, data, path, ReportFormat::Markdown);
        const QString text = QString::fromUtf8(readAll(path));
        QVERIFY2(text.contains(QStringLiteral("| 16-bit kernels |")), qPrintable(text));
        const auto rowOf = [&](const QString& label) {
            for (const QString& line : text.split(u'\n'))
                if (line.startsWith(QStringLiteral("| ") + label + QStringLiteral(" | CPU")))
                    return line;
            return QString();
        };
        const QString nativeRow = rowOf(data.runs[0].label), unknownRow = rowOf(data.runs[1].label);
        // Markdown escapes the underscores of "avx512_core_bf16".
        const QString shown = lines.join(QStringLiteral("; ")).replace(u'_', QStringLiteral("\\_"));
        QVERIFY2(nativeRow.endsWith(QStringLiteral("| ") + shown + QStringLiteral(" |")),
                 qPrintable(nativeRow + QStringLiteral("\n") + text));
        QVERIFY2(unknownRow.endsWith(QStringLiteral("| - |")), qPrintable(unknownRow + QStringLiteral("\n") + text));
    }

    // A 16-bit all-reduce's per-step counts: the overflow summary states their totals over the
    // run and lists the steps that lost values; a run without them says nothing of it.
    void aSixteenBitAllReduceListsTheStepsThatLostValues()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString db = dir.filePath(QStringLiteral("allreduce.sqlite"));
        SyntheticRun pair;
        pair.name = QStringLiteral("mlp-2-ranks-fp16-sum");
        pair.precision = QStringLiteral("mixed-fp16");
        pair.epochs = 1;
        pair.worldSize = 2;
        pair.allReduceInCompute = true;
        SyntheticRun single = pair;
        single.name = QStringLiteral("mlp-1-rank");
        single.worldSize = 1;
        single.allReduceInCompute = false;
        const qint64 two = writeSyntheticRun(db, pair), one = writeSyntheticRun(db, single);
        qint64 flushed = 0, overflowed = 0, lossy = 0, firstLossy = 0;
        const qint64 steps = qint64(pair.epochs) * pair.stepsPerEpoch;
        for (qint64 step = 1; step <= steps; ++step) {
            const AllReduceLoss lost = syntheticAllReduceLoss(pair, step);
            flushed += lost.flushed;
            overflowed += lost.overflowed;
            if (lost.flushed + lost.overflowed > 0 && ++lossy == 1)
                firstLossy = step;
        }
        QVERIFY(flushed > 0 && overflowed > 0 && lossy > 10); // the table shows the first 10
        storage::RunStore store(db);
        const QString path = dir.filePath(QStringLiteral("report.md"));
        writeReport(store, loadReportData(store, {one, two}), path, ReportFormat::Markdown);
        const QString text = QString::fromUtf8(readAll(path));
        const QString sentence =
            QStringLiteral("the 16-bit all-reduce flushed %1 values to zero in the division "
                           "before the sum and overflowed %2 in the sum, over %3 steps; %4 "
                           "of them lost values.")
                .arg(formatCount(flushed), formatCount(overflowed), formatCount(steps), formatCount(lossy));
        QVERIFY2(text.contains(sentence), qPrintable(sentence + QStringLiteral("\n") + text));
        QCOMPARE(text.count(QStringLiteral("16-bit all-reduce flushed")), 1); // not for the 1-rank run
        QVERIFY2(text.contains(QStringLiteral("The first 10 of %1 steps whose all-reduce lost values.").arg(lossy)),
                 qPrintable(text));
        const AllReduceLoss first = syntheticAllReduceLoss(pair, firstLossy);
        QVERIFY2(
            text.contains(QStringLiteral("| %1 | %2 | %3 |")
                              .arg(formatCount(firstLossy), formatCount(first.flushed), formatCount(first.overflowed))),
            qPrintable(text));
    }

    void unwritablePathIsAnIoError_data()
    {
        QTest::addColumn<int>("format");
        QTest::newRow("pdf") << int(ReportFormat::Pdf);
        QTest::newRow("html") << int(ReportFormat::Html);
        QTest::newRow("markdown") << int(ReportFormat::Markdown);
        QTest::newRow("csv") << int(ReportFormat::Csv);
    }

    void unwritablePathIsAnIoError()
    {
        QFETCH(int, format);
        const ReportData data = loadReportData(*m_store, {m_sample.fp32});
        const QString path = m_dir.filePath(QStringLiteral("no-such-directory/report.out"));
        try {
            writeReport(*m_store, data, path, ReportFormat(format));
            QFAIL("writing into a missing directory must fail");
        } catch (const IoError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("no-such-directory")), e.what());
        }
    }

private:
    void addRunSets()
    {
        QTest::addColumn<QList<qint64>>("runs");
        QTest::newRow("single fp32") << QList<qint64>{m_sample.fp32};
        QTest::newRow("single mixed") << QList<qint64>{m_sample.mixed};
        QTest::newRow("comparison") << QList<qint64>{m_sample.fp32, m_sample.mixed};
        QTest::newRow("with interrupted") << QList<qint64>{m_sample.fp32, m_sample.mixed, m_sample.interrupted};
    }

    ReportData load()
    {
        const QList<qint64> runs = *static_cast<QList<qint64>*>(QTest::qData("runs", qMetaTypeId<QList<qint64>>()));
        return loadReportData(*m_store, runs);
    }

    static bool hasLossScaling(const ReportData& data)
    {
        return std::any_of(data.runs.cbegin(), data.runs.cend(),
                           [](const RunData& run) { return run.usesLossScaling(); });
    }

    // The text of the PDF (or of one page), as a reader copying it would get it.
    static QString pdfText(const QString& path, int page = 0)
    {
        QStringList arguments;
        if (page > 0)
            arguments << "-f" << QString::number(page) << "-l" << QString::number(page);
        arguments << path << "-";
        QProcess process;
        process.start(QStringLiteral("pdftotext"), arguments);
        if (!process.waitForFinished(30000) || process.exitCode() != 0)
            return {};
        return QString::fromUtf8(process.readAllStandardOutput());
    }

    QTemporaryDir m_dir;
    SampleDatabase m_sample;
    std::unique_ptr<storage::RunStore> m_store;
};

QTEST_MAIN(ReportRenderTest)
#include "report_render_test.moc"

// mantissa-cli formats and quantize, run as a user would: the table of formats, the issue's
// worked cases (957 -> 896 in MXFP8 under the floor rule; E4M3's overflow boundary with and
// without --saturate; E5M2 to Inf), JSON lines, an input file, NVFP4's 2D tiles (--tile),
// stochastic rounding's seed, and every kind of bad input named in its message with exit code 2.
#include "cli_test_support.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace mantissa::cli::test;

namespace {

// The JSON lines of `kind` ("value", "block" or "summary").
QList<QJsonObject> jsonLines(const CliResult& r, const QString& kind)
{
    QList<QJsonObject> lines;
    for (const QString& line : r.outLines()) {
        const QJsonObject object = QJsonDocument::fromJson(line.toUtf8()).object();
        if (object.value(QStringLiteral("kind")).toString() == kind)
            lines << object;
    }
    return lines;
}

CliResult quantize(const QStringList& arguments) { return runCli(QStringList{QStringLiteral("quantize")} + arguments); }

} // namespace

class CliFormatsTest : public QObject {
    Q_OBJECT

private slots:
    void formatsPrintsTheTable()
    {
        const CliResult r = runCli({QStringLiteral("formats")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QStringList lines = r.outLines();
        for (const char* column : {"sign/exp/mant", "bias", "max", "min normal", "min subnormal", "specials"})
            QVERIFY2(lines.front().contains(QLatin1String(column)), column);
        const auto row = [&](const char* name) {
            for (const QString& line : lines)
                if (line.startsWith(QLatin1String(name) + u' '))
                    return line.simplified();
            return QString();
        };
        QCOMPARE(row("e4m3").section(u' ', 3), QStringLiteral("1/4/3 7 448 2^-6 2^-9 no Inf; NaN = S.1111.111"));
        QVERIFY2(row("e5m2").contains(QStringLiteral("1/5/2 15 57344 2^-14 2^-16")), qPrintable(row("e5m2")));
        QVERIFY2(row("e3m2").contains(QStringLiteral("1/3/2 3 28 0.25 0.0625 none")), qPrintable(row("e3m2")));
        QVERIFY2(row("e2m3").contains(QStringLiteral("1/2/3 1 7.5 1 0.125 none")), qPrintable(row("e2m3")));
        QVERIFY2(row("e2m1").contains(QStringLiteral("1/2/1 1 6 1 0.5 none")), qPrintable(row("e2m1")));
        QVERIFY2(row("e8m0").contains(QStringLiteral("0/8/0 127 2^127 2^-127 -")), qPrintable(row("e8m0")));
        QVERIFY(r.out.contains(QStringLiteral("nvfp4")));

        const CliResult json = runCli({QStringLiteral("formats"), QStringLiteral("--json")});
        QCOMPARE(json.exitCode, 0);
        QCOMPARE(json.outLines().size(), 6);
        const QJsonObject e4m3 = QJsonDocument::fromJson(json.outLines().front().toUtf8()).object();
        QCOMPARE(e4m3.value(QStringLiteral("name")).toString(), QStringLiteral("e4m3"));
        QCOMPARE(e4m3.value(QStringLiteral("max")).toDouble(), 448.0);
        QCOMPARE(e4m3.value(QStringLiteral("min_subnormal")).toDouble(), 0.001953125);
    }

    // microxcaling issue 4: floor(log2 957) - 8 = 1, 957 / 2 = 478.5 clips to 448, times 2 = 896.
    void mxfp8FloorTurns957Into896()
    {
        const CliResult r = quantize({QStringLiteral("--format"), QStringLiteral("mxfp8"), QStringLiteral("--pad"),
                                      QStringLiteral("--json"), QStringLiteral("957")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QJsonObject> values = jsonLines(r, QStringLiteral("value"));
        QCOMPARE(values.size(), 1);
        QCOMPARE(values[0].value(QStringLiteral("decoded")).toDouble(), 896.0);
        QCOMPARE(values[0].value(QStringLiteral("code")).toString(), QStringLiteral("0x7e"));
        QCOMPARE(values[0].value(QStringLiteral("scale")).toDouble(), 2.0);
        QCOMPARE(values[0].value(QStringLiteral("error")).toDouble(), -61.0);
        const QList<QJsonObject> blocks = jsonLines(r, QStringLiteral("block"));
        QCOMPARE(blocks.size(), 1);
        QVERIFY(blocks[0].value(QStringLiteral("clipped")).toBool());
        QCOMPARE(blocks[0].value(QStringLiteral("scale_code")).toString(), QStringLiteral("0x80"));
        const QList<QJsonObject> summary = jsonLines(r, QStringLiteral("summary"));
        QCOMPARE(summary.size(), 1);
        QCOMPARE(summary[0].value(QStringLiteral("clipped_blocks")).toInt(), 1);

        // ceil and rceil scale by 4 instead: 957 / 4 = 239.25 rounds to 240, 960, no clipping.
        for (const char* rule : {"ceil", "rceil"}) {
            const CliResult other = quantize({QStringLiteral("--format"), QStringLiteral("mxfp8"),
                                              QStringLiteral("--pad"), QStringLiteral("--scale-rule"),
                                              QLatin1String(rule), QStringLiteral("--json"), QStringLiteral("957")});
            QVERIFY2(other.exitCode == 0, qPrintable(other.describe()));
            QCOMPARE(jsonLines(other, QStringLiteral("value"))[0].value(QStringLiteral("decoded")).toDouble(), 960.0);
            QVERIFY(!jsonLines(other, QStringLiteral("block"))[0].value(QStringLiteral("clipped")).toBool());
        }

        // The text form says the same.
        const CliResult text = quantize(
            {QStringLiteral("--format"), QStringLiteral("mxfp8"), QStringLiteral("--pad"), QStringLiteral("957")});
        QVERIFY2(text.exitCode == 0, qPrintable(text.describe()));
        QVERIFY2(text.outLines()[2].simplified() == QStringLiteral("0 957 0 0x7e 448 2 896 -61"), qPrintable(text.out));
        QVERIFY2(text.out.contains(QStringLiteral("1 clipped (100.0%)")), qPrintable(text.out));
    }

    // E4M3 rounds first, as if its exponent were unbounded: 449 is nearer 448 than 480 and
    // never overflows; 464 is the tie and goes to even (448); above it, the rounded value
    // would be 480, which E4M3 does not have: NaN, or 448 with --saturate.
    void e4m3OverflowWithAndWithoutSaturate()
    {
        const QStringList values = {QStringLiteral("449"), QStringLiteral("464"), QStringLiteral("465"),
                                    QStringLiteral("inf")};
        const CliResult plain = quantize(
            QStringList{QStringLiteral("--format"), QStringLiteral("e4m3"), QStringLiteral("--json")} + values);
        QVERIFY2(plain.exitCode == 0, qPrintable(plain.describe()));
        const QList<QJsonObject> nonSaturating = jsonLines(plain, QStringLiteral("value"));
        QCOMPARE(nonSaturating.size(), 4);
        QCOMPARE(nonSaturating[0].value(QStringLiteral("decoded")).toDouble(), 448.0);
        QCOMPARE(nonSaturating[1].value(QStringLiteral("decoded")).toDouble(), 448.0);
        QCOMPARE(nonSaturating[2].value(QStringLiteral("decoded")).toString(), QStringLiteral("nan"));
        QCOMPARE(nonSaturating[2].value(QStringLiteral("code")).toString(), QStringLiteral("0x7f"));
        QCOMPARE(nonSaturating[3].value(QStringLiteral("decoded")).toString(), QStringLiteral("nan"));
        // Overflowed counts finite values beyond the range; the Inf is counted as a non-finite input.
        const QJsonObject summary = jsonLines(plain, QStringLiteral("summary"))[0];
        QCOMPARE(summary.value(QStringLiteral("overflowed")).toInt(), 1);
        QCOMPARE(summary.value(QStringLiteral("non_finite_inputs")).toInt(), 1);

        const CliResult saturated = quantize(QStringList{QStringLiteral("--format"), QStringLiteral("e4m3"),
                                                         QStringLiteral("--saturate"), QStringLiteral("--json")} +
                                             values);
        QVERIFY2(saturated.exitCode == 0, qPrintable(saturated.describe()));
        for (const QJsonObject& line : jsonLines(saturated, QStringLiteral("value"))) {
            QCOMPARE(line.value(QStringLiteral("decoded")).toDouble(), 448.0);
            QCOMPARE(line.value(QStringLiteral("code")).toString(), QStringLiteral("0x7e"));
        }
        // E5M2 has an Inf: 61440 is the tie between 57344 and 2^16 and goes to Inf.
        const CliResult e5m2 = quantize({QStringLiteral("--format"), QStringLiteral("e5m2"), QStringLiteral("--json"),
                                         QStringLiteral("61440"), QStringLiteral("61439")});
        const QList<QJsonObject> e5m2Values = jsonLines(e5m2, QStringLiteral("value"));
        QCOMPARE(e5m2Values.size(), 2);
        QCOMPARE(e5m2Values[0].value(QStringLiteral("decoded")).toString(), QStringLiteral("inf"));
        QCOMPARE(e5m2Values[0].value(QStringLiteral("code")).toString(), QStringLiteral("0x7c"));
        QCOMPARE(e5m2Values[1].value(QStringLiteral("decoded")).toDouble(), 57344.0);
    }

    void negativeValuesAfterDoubleDash()
    {
        const CliResult r = quantize({QStringLiteral("--format"), QStringLiteral("e2m1"), QStringLiteral("--json"),
                                      QStringLiteral("--"), QStringLiteral("-2.5"), QStringLiteral("0x1p-2")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QJsonObject> values = jsonLines(r, QStringLiteral("value"));
        QCOMPARE(values.size(), 2);
        QCOMPARE(values[0].value(QStringLiteral("decoded")).toDouble(), -2.0); // tie 2 | 3: even
        QCOMPARE(values[0].value(QStringLiteral("code")).toString(), QStringLiteral("0x0c"));
        QCOMPARE(values[1].value(QStringLiteral("decoded")).toDouble(), 0.0); // 0.25: tie 0 | 0.5: even
    }

    // A negative number is a value wherever it stands, without "--": before the options, between
    // them, and after a value-taking option's value (--seed's 5 stays the seed).
    void negativeValuesWithoutDoubleDash()
    {
        const CliResult r = quantize({QStringLiteral("-1.5"), QStringLiteral("--format"), QStringLiteral("e4m3"),
                                      QStringLiteral("--seed"), QStringLiteral("5"), QStringLiteral("-449"),
                                      QStringLiteral("--json"), QStringLiteral("-inf")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QJsonObject> values = jsonLines(r, QStringLiteral("value"));
        QCOMPARE(values.size(), 3);
        QCOMPARE(values[0].value(QStringLiteral("decoded")).toDouble(), -1.5);
        QCOMPARE(values[1].value(QStringLiteral("decoded")).toDouble(), -448.0); // below the midpoint 464
        QCOMPARE(values[2].value(QStringLiteral("decoded")).toString(), QStringLiteral("nan"));
        // An unknown option is still refused by name.
        const CliResult bad = quantize({QStringLiteral("--format"), QStringLiteral("e4m3"), QStringLiteral("-x")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("Unknown option 'x'")), qPrintable(bad.err));
    }

    void inputFileWithBlocksAndStatistics()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("values.txt"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QByteArray text = "# 64 values in two rows of 32\n";
        for (int i = 0; i < 64; ++i)
            text += QByteArray::number(i % 2 ? -(i + 1) * 0.37 : (i + 1) * 1.3) + (i % 8 == 7 ? "\n" : ", ");
        file.write(text);
        file.close();
        const CliResult r = quantize({QStringLiteral("--format"), QStringLiteral("mxfp4"), QStringLiteral("--input"),
                                      path, QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(jsonLines(r, QStringLiteral("value")).size(), 64);
        QCOMPARE(jsonLines(r, QStringLiteral("block")).size(), 2);
        const QJsonObject summary = jsonLines(r, QStringLiteral("summary")).front();
        QCOMPARE(summary.value(QStringLiteral("values")).toInt(), 64);
        QVERIFY(summary.value(QStringLiteral("sqnr_db")).toDouble() > 5.0);
        QVERIFY(!summary.value(QStringLiteral("scale_exponents")).toObject().isEmpty());

        const CliResult summaryOnly = quantize({QStringLiteral("--format"), QStringLiteral("mxfp4"),
                                                QStringLiteral("--input"), path, QStringLiteral("--summary")});
        QVERIFY2(summaryOnly.exitCode == 0, qPrintable(summaryOnly.describe()));
        QVERIFY2(summaryOnly.out.contains(QStringLiteral("64 values: 2 blocks")), qPrintable(summaryOnly.out));
    }

    // NVFP4's 2D tiles: a 4 x 4 matrix in 2 x 2 tiles (--block 2 --tile 2 --row 4) has four
    // blocks, each scaled by its own largest value. The tensor's amax 6 makes S_enc = 448; tile
    // 0 (amax 6) gets the scale 448 and keeps its 0.5; tile 3 (amax 1) gets E4M3(448 / 6) = 72,
    // so its 0.5 is 0.5 x 448 / 72 = 3.11, code 3, and comes back as 3 x 72 x 6 / 2688 = 0.482.
    void tilesSpanRows()
    {
        const QStringList matrix = {"6", "0.5", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "0.5"};
        const CliResult r =
            quantize(QStringList{"--format", "nvfp4", "--block", "2", "--tile", "2", "--row", "4", "--json"} + matrix);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QJsonObject> blocks = jsonLines(r, QStringLiteral("block"));
        QCOMPARE(blocks.size(), 4);
        QCOMPARE(blocks[0].value(QStringLiteral("amax")).toDouble(), 6.0);
        QCOMPARE(blocks[3].value(QStringLiteral("amax")).toDouble(), 1.0);
        const QList<QJsonObject> values = jsonLines(r, QStringLiteral("value"));
        QCOMPARE(values.size(), 16);
        QCOMPARE(values[4].value(QStringLiteral("block")).toInt(), 0); // row 1, column 0: tile 0
        QCOMPARE(values[15].value(QStringLiteral("block")).toInt(), 3);
        QCOMPARE(values[1].value(QStringLiteral("decoded")).toDouble(), 0.5);
        QVERIFY2(std::abs(values[15].value(QStringLiteral("decoded")).toDouble() - 3.0 * 72 * 6 / 2688) < 1e-6,
                 qPrintable(r.out));
        // 3 rows do not fill a tile of 2 rows: refused unless padded.
        const QStringList twelve = matrix.mid(0, 12);
        const CliResult partial =
            quantize(QStringList{"--format", "nvfp4", "--block", "2", "--tile", "2", "--row", "4"} + twelve);
        QCOMPARE(partial.exitCode, 2);
        QVERIFY2(partial.err.contains("3 rows of 4 values are not a multiple of the tile's 2 rows"),
                 qPrintable(partial.describe()));
        const CliResult padded = quantize(
            QStringList{"--format", "nvfp4", "--block", "2", "--tile", "2", "--row", "4", "--pad", "--json"} + twelve);
        QVERIFY2(padded.exitCode == 0, qPrintable(padded.describe()));
        QCOMPARE(jsonLines(padded, QStringLiteral("block")).size(), 4);
    }

    void stochasticRoundingFollowsTheSeed()
    {
        QStringList values;
        for (int i = 0; i < 64; ++i)
            values << QString::number(1.0 + i / 64.0);
        const auto run = [&](const char* seed) {
            return quantize(QStringList{QStringLiteral("--format"), QStringLiteral("e2m1"),
                                        QStringLiteral("--rounding"), QStringLiteral("stochastic"),
                                        QStringLiteral("--seed"), QLatin1String(seed), QStringLiteral("--json")} +
                            values)
                .out;
        };
        QCOMPARE(run("7"), run("7"));
        QVERIFY(run("7") != run("8"));
    }

    void badInputIsNamed_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown format") << QStringList{"--format", "fp7", "1"} << "unknown format \"fp7\"";
        QTest::newRow("mxfp6 names two formats")
            << QStringList{"--format", "mxfp6", "1"} << "\"mxfp6\" names two element formats (OCP MX v1.0)";
        QTest::newRow("no format") << QStringList{"1"} << "--format is required";
        QTest::newRow("not a number") << QStringList{"--format", "e4m3", "1", "12x"}
                                      << "value 2, \"12x\", is not a number";
        QTest::newRow("block does not divide")
            << QStringList{"--format", "mxfp8", "1", "2", "3"} << "3 values are not a multiple of the block size 32";
        QTest::newRow("block option on a plain format")
            << QStringList{"--format", "e4m3", "--block", "8", "1"} << "--block applies to the block formats";
        QTest::newRow("tile without row")
            << QStringList{"--format", "nvfp4", "--tile", "16", "1"} << "--tile needs --row";
        QTest::newRow("tile on a plain format") << QStringList{"--format", "e2m1", "--tile", "16", "--row", "1", "1"}
                                                << "--tile applies to the block formats";
        QTest::newRow("bad scale rule") << QStringList{"--format", "mxfp8", "--scale-rule", "round", "1"}
                                        << "--scale-rule is \"round\"; expected floor, ceil or rceil";
        QTest::newRow("bad rounding") << QStringList{"--format", "e4m3", "--rounding", "up", "1"}
                                      << "--rounding is \"up\"; expected rne or stochastic";
        QTest::newRow("missing file") << QStringList{"--format", "e4m3", "--input", "/nonexistent/values.txt"}
                                      << "cannot read the input file /nonexistent/values.txt";
        QTest::newRow("values and file") << QStringList{"--format", "e4m3", "--input", "x.txt", "1"}
                                         << "give the values or --input FILE";
        QTest::newRow("no values") << QStringList{"--format", "e4m3"} << "give the values or --input FILE";
    }

    void badInputIsNamed()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, message);
        const CliResult r = quantize(arguments);
        QVERIFY2(r.finished, qPrintable(r.describe()));
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.describe()));
        QVERIFY(r.out.isEmpty());
    }

    void unreadableFileLineIsNamed()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("bad.txt"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("1 2 3\n4 five 6\n");
        file.close();
        const CliResult r =
            quantize({QStringLiteral("--format"), QStringLiteral("e4m3"), QStringLiteral("--input"), path});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(path + QStringLiteral(", line 2: \"five\" is not a number")), qPrintable(r.describe()));
    }
};

QTEST_GUILESS_MAIN(CliFormatsTest)
#include "cli_formats_test.moc"

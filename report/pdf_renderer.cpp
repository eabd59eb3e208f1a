#include "report/pdf_renderer.h"

#include "engine/util/check.h"
#include "report/html_blocks.h"
#include "report/report_plots.h"

#include <QAbstractTextDocumentLayout>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QPdfWriter>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace mantissa::report {

namespace {

// The page is laid out in points: at 72 dpi one device unit is one point, so fonts,
// QCustomPlot's pixel-sized ticks and pens, and the margins below share one unit.
constexpr int kResolution = 72;
constexpr double kMarginX = 46, kMarginTop = 44, kMarginBottom = 52;
constexpr double kPlotHeightRatio = 0.42; // of the text width: a plot fits a third of a page
// A unit that does not fit the rest of the page starts a new one; a unit taller than a
// page flows across pages, starting on this page only when this much of it is left.
constexpr double kMinFlowSpace = 120;

QFont bodyFont()
{
    QFont font = QFontDatabase::systemFont(QFontDatabase::GeneralFont);
    font.setPointSizeF(9);
    font.setHintingPreference(QFont::PreferNoHinting);
    // Without shaping, Latin text gets no ligatures: with them "fi" and "fl" become single
    // glyphs that copy, search and pdftotext return as U+FB01 and U+FB02.
    font.setStyleStrategy(QFont::PreferNoShaping);
    return font;
}

// Blocks that must stay together on a page: headings with what follows them, a plot with
// its caption.
struct Unit {
    double gapAbove = 3; // points; more above a section
    QString before;      // HTML above the plot (or the whole unit)
    bool hasPlot = false;
    ReportBlock plot;
    QString after; // HTML below the plot: its caption
};

QList<Unit> groupUnits(const ReportDocument& document)
{
    QList<Unit> units;
    Unit unit;
    unit.before = QStringLiteral("<h1>%1</h1><p class=\"subtitle\">%2</p>")
                      .arg(escapeHtml(document.title), escapeHtml(document.subtitle));
    for (const ReportBlock& block : document.blocks) {
        if (block.kind == ReportBlock::Kind::Heading) {
            const bool onlyHeadings =
                unit.before.endsWith(QLatin1String("</h2>")) || unit.before.endsWith(QLatin1String("</h3>"));
            if (!unit.before.isEmpty() && !onlyHeadings) {
                units << unit;
                unit = Unit{};
            }
            if (unit.before.isEmpty())
                unit.gapAbove = block.level == 1 ? 14 : 8;
            unit.before += blockHtml(block, HtmlDialect::QtRichText);
            continue;
        }
        if (block.kind == ReportBlock::Kind::Plot) {
            unit.hasPlot = true;
            unit.plot = block;
            if (!block.caption.isEmpty())
                unit.after = QStringLiteral("<p class=\"caption\">%1</p>").arg(escapeHtml(block.caption));
        } else {
            unit.before += blockHtml(block, HtmlDialect::QtRichText);
        }
        units << unit;
        unit = Unit{};
    }
    if (!unit.before.isEmpty())
        units << unit;
    return units;
}

class PdfLayout {
public:
    PdfLayout(QPdfWriter& writer, const ReportData& data, QString footer)
        : m_writer(writer), m_data(data), m_footer(std::move(footer))
    {
        const QSizeF page = writer.pageLayout().fullRectPoints().size();
        m_page = QRectF(kMarginX, kMarginTop, page.width() - 2 * kMarginX, page.height() - kMarginTop - kMarginBottom);
        m_fullPage = QRectF(QPointF(0, 0), page);
    }

    bool begin() { return m_painter.begin(&m_writer); }

    void place(const Unit& unit)
    {
        std::unique_ptr<QTextDocument> before = unit.before.isEmpty() ? nullptr : document(unit.before);
        std::unique_ptr<QTextDocument> after = unit.after.isEmpty() ? nullptr : document(unit.after);
        // A tall plot (a row per layer) keeps a caption's room on its page.
        const double plotHeight = unit.hasPlot
                                      ? std::round(std::min(m_page.width() * kPlotHeightRatio * unit.plot.heightScale,
                                                            m_page.height() * 0.85))
                                      : 0;
        const double height = heightOf(before.get()) + plotHeight + heightOf(after.get());
        if (m_y > 0)
            m_y += unit.gapAbove; // dropped at the top of a page
        if (height > m_page.height() && !unit.hasPlot) {
            if (m_page.height() - m_y < kMinFlowSpace)
                newPage();
            flow(*before);
            return;
        }
        if (m_y > 0 && m_y + height > m_page.height())
            newPage();
        if (before)
            draw(*before);
        if (unit.hasPlot) {
            m_painter.save();
            m_painter.translate(m_page.left(), m_page.top() + m_y);
            drawPlot(m_painter, unit.plot, m_data, QSize(int(m_page.width()), int(plotHeight)));
            m_painter.restore();
            m_y += plotHeight;
        }
        if (after)
            draw(*after);
    }

    void finish()
    {
        drawFooter();
        m_painter.end();
    }

private:
    std::unique_ptr<QTextDocument> document(const QString& html)
    {
        auto doc = std::make_unique<QTextDocument>();
        doc->documentLayout()->setPaintDevice(&m_writer);
        doc->setDefaultFont(bodyFont());
        doc->setDefaultStyleSheet(reportStyleSheet(HtmlDialect::QtRichText));
        doc->setDocumentMargin(0);
        QTextOption option = doc->defaultTextOption();
        option.setUseDesignMetrics(true); // fractional advances: the layout is the PDF's
        doc->setDefaultTextOption(option);
        doc->setHtml(html);
        doc->setTextWidth(m_page.width());
        return doc;
    }

    static double heightOf(const QTextDocument* doc) { return doc ? doc->size().height() : 0; }

    void draw(QTextDocument& doc)
    {
        m_painter.save();
        m_painter.translate(m_page.left(), m_page.top() + m_y);
        QAbstractTextDocumentLayout::PaintContext context;
        context.palette.setColor(QPalette::Text, Qt::black);
        doc.documentLayout()->draw(&m_painter, context);
        m_painter.restore();
        m_y += doc.size().height();
    }

    // A unit taller than a page: QTextDocument paginates it (lines and table rows are not
    // split, table headers repeat). Its pages are as tall as ours, so the part of this page
    // already used is filled by an empty first line of that height.
    void flow(QTextDocument& doc)
    {
        doc.setPageSize(m_page.size());
        if (m_y > 0) {
            QTextCursor cursor(&doc);
            cursor.insertBlock();
            cursor.movePosition(QTextCursor::Start);
            QTextBlockFormat spacer;
            spacer.setLineHeight(m_y, QTextBlockFormat::FixedHeight);
            cursor.setBlockFormat(spacer);
            // Format lengths are screen pixels that the layout scales to the device; measure
            // the scale rather than assume the screen's resolution.
            const double laidOut = doc.documentLayout()->blockBoundingRect(doc.begin().next()).top();
            if (laidOut > 0) {
                spacer.setLineHeight(m_y * m_y / laidOut, QTextBlockFormat::FixedHeight);
                cursor.setBlockFormat(spacer);
            }
        }
        const int pages = doc.pageCount();
        const double pageHeight = m_page.height();
        for (int i = 0; i < pages; ++i) {
            if (i > 0)
                newPage();
            m_painter.save();
            m_painter.translate(m_page.left(), m_page.top() - i * pageHeight);
            QAbstractTextDocumentLayout::PaintContext context;
            context.palette.setColor(QPalette::Text, Qt::black);
            // A hair inside the page: the layout draws every line that touches the clip, and
            // the first line of the next page starts exactly on its bottom edge; drawn
            // clipped, it would still be in the PDF's text (copy, search, pdftotext) twice.
            context.clip = QRectF(0, i * pageHeight + 0.01, m_page.width(), pageHeight - 0.02);
            m_painter.setClipRect(context.clip);
            doc.documentLayout()->draw(&m_painter, context);
            m_painter.restore();
        }
        const double bottom = doc.documentLayout()->blockBoundingRect(doc.lastBlock()).bottom();
        m_y = bottom - (pages - 1) * pageHeight;
    }

    void newPage()
    {
        drawFooter();
        m_writer.newPage();
        ++m_pageNumber;
        m_y = 0;
    }

    void drawFooter()
    {
        m_painter.save();
        QFont font = bodyFont();
        font.setPointSizeF(7);
        m_painter.setFont(font);
        m_painter.setPen(QColor(110, 110, 110));
        const QRectF line(m_page.left(), m_fullPage.height() - kMarginBottom + 16, m_page.width(), 12);
        m_painter.drawLine(QLineF(line.topLeft() - QPointF(0, 4), line.topRight() - QPointF(0, 4)));
        const QString page = QStringLiteral("page %1").arg(m_pageNumber);
        const QString footer = QFontMetricsF(font, &m_writer).elidedText(m_footer, Qt::ElideMiddle, line.width() - 60);
        m_painter.drawText(line, Qt::AlignLeft | Qt::AlignVCenter, footer);
        m_painter.drawText(line, Qt::AlignRight | Qt::AlignVCenter, page);
        m_painter.restore();
    }

    QPdfWriter& m_writer;
    const ReportData& m_data;
    QString m_footer;
    QCPPainter m_painter;
    QRectF m_page; // the text area, in points
    QRectF m_fullPage;
    double m_y = 0; // used height of the text area on this page
    int m_pageNumber = 1;
};

} // namespace

void writePdf(const ReportDocument& document, const ReportData& data, const QString& path)
{
    const QFileInfo file(path);
    if (!file.absoluteDir().exists())
        throw IoError(QStringLiteral("%1: cannot write the report: the directory %2 does not exist")
                          .arg(file.absoluteFilePath(), file.absolutePath())
                          .toStdString());
    QPdfWriter writer(path);
    writer.setResolution(kResolution);
    writer.setPageSize(QPageSize(QPageSize::A4));
    writer.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout::Point);
    writer.setTitle(QStringLiteral("%1: %2").arg(document.title, data.title()));
    writer.setCreator(QStringLiteral("Mantissa %1").arg(data.mantissaVersion));
    PdfLayout layout(writer, data, QStringLiteral("%1 · %2").arg(document.title, data.title()));
    if (!layout.begin())
        throw IoError(QStringLiteral("%1: cannot write the report (is the directory writable?)")
                          .arg(QFileInfo(path).absoluteFilePath())
                          .toStdString());
    for (const Unit& unit : groupUnits(document))
        layout.place(unit);
    layout.finish();
}

} // namespace mantissa::report

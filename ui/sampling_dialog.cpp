#include "ui/sampling_dialog.h"

#include "engine/backend/backend_factory.h"
#include "engine/train/text_sampler.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QTextEdit>
#include <QThread>
#include <QVBoxLayout>

namespace mantissa::ui {

SamplingDialog::SamplingDialog(RunConfig config, QString checkpointPath, const QString& runLabel, QWidget* parent)
    : QDialog(parent), m_config(std::move(config)), m_checkpointPath(std::move(checkpointPath))
{
    setWindowTitle(tr("Sample text — %1").arg(runLabel));
    setObjectName("samplingDialog");
    auto* heading = new QLabel(tr("<b>%1</b>: the prompt's last %2 bytes go in; each next byte is drawn from the "
                                  "model's prediction, one at a time, on the CPU.")
                                   .arg(runLabel.toHtmlEscaped())
                                   .arg(m_config.data.context));
    heading->setWordWrap(true);

    m_prompt = new QPlainTextEdit(QStringLiteral("The "));
    m_prompt->setObjectName("samplingPrompt");
    m_prompt->setMaximumHeight(70);
    m_tokens = new QSpinBox;
    m_tokens->setObjectName("samplingTokens");
    m_tokens->setRange(1, 100000);
    m_tokens->setValue(300);
    m_tokens->setSuffix(tr(" bytes"));
    m_temperature = new QDoubleSpinBox;
    m_temperature->setObjectName("samplingTemperature");
    m_temperature->setRange(0, 5);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(0.8);
    m_temperature->setSpecialValueText(tr("0 (greedy)"));
    m_temperature->setToolTip(tr("0 takes the most likely byte; below 1 sharpens the distribution, above 1 "
                                 "flattens it"));
    m_seed = new QSpinBox;
    m_seed->setObjectName("samplingSeed");
    m_seed->setRange(0, 2147483647);
    m_seed->setToolTip(tr("The same seed, prompt and weights give the same text (mantissa-cli sample --seed)"));

    auto* form = new QFormLayout;
    form->addRow(tr("Prompt"), m_prompt);
    form->addRow(tr("Generate"), m_tokens);
    form->addRow(tr("Temperature"), m_temperature);
    form->addRow(tr("Seed"), m_seed);

    m_output = new QTextEdit;
    m_output->setObjectName("samplingOutput");
    m_output->setReadOnly(true);
    m_output->setFontFamily(QStringLiteral("monospace"));
    m_output->setPlaceholderText(tr("The prompt (grey) and the generated text appear here."));
    m_status = new QLabel;
    m_status->setObjectName("samplingStatus");
    m_status->setWordWrap(true);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    m_generate = buttons->addButton(tr("Generate"), QDialogButtonBox::ActionRole);
    m_generate->setObjectName("samplingGenerate");
    m_generate->setDefault(true);
    connect(m_generate, &QPushButton::clicked, this, &SamplingDialog::generate);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(heading);
    layout->addLayout(form);
    layout->addWidget(m_output, 1);
    layout->addWidget(m_status);
    layout->addWidget(buttons);
    resize(720, 520);
}

SamplingDialog::~SamplingDialog()
{
    // The worker reads members of this dialog's settings copy; it must be done before they go.
    if (m_worker)
        m_worker->wait();
}

void SamplingDialog::generate()
{
    if (m_worker)
        return;
    const QString prompt = m_prompt->toPlainText();
    if (prompt.isEmpty()) {
        showError(tr("The prompt is empty: give the text to continue."));
        return;
    }
    SamplingSettings settings;
    settings.tokens = m_tokens->value();
    settings.temperature = static_cast<float>(m_temperature->value());
    settings.seed = static_cast<std::uint64_t>(m_seed->value());
    m_generate->setEnabled(false);
    m_status->setStyleSheet({});
    m_status->setText(tr("Generating %n byte(s)…", nullptr, m_tokens->value()));

    const RunConfig config = m_config;
    const std::string checkpoint = m_checkpointPath.toStdString();
    const std::string promptBytes = prompt.toStdString();
    QPointer<SamplingDialog> self(this);
    m_worker = QThread::create([=] {
        QString text, error;
        try {
            // The CPU: always there, and the text does not depend on where training ran.
            BackendSelection selection = selectBackend("cpu", 0);
            TextSampler sampler(config, *selection.backend, checkpoint);
            text = QString::fromUtf8(sampler.generate(promptBytes, settings));
        } catch (const std::exception& e) {
            error = QString::fromLocal8Bit(e.what());
        }
        QMetaObject::invokeMethod(
            self,
            [self, prompt, text, error] {
                if (!self)
                    return;
                if (error.isEmpty())
                    self->showText(prompt, text);
                else
                    self->showError(error);
            },
            Qt::QueuedConnection);
    });
    connect(m_worker, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &QThread::finished, this, [this] {
        m_worker = nullptr;
        m_generate->setEnabled(true);
    });
    m_worker->start();
}

void SamplingDialog::showText(const QString& prompt, const QString& text)
{
    m_output->setHtml(
        QStringLiteral("<pre style=\"white-space: pre-wrap\"><span style=\"color: gray\">%1</span>%2</pre>")
            .arg(prompt.toHtmlEscaped(), text.toHtmlEscaped()));
    m_status->setText(tr("%n byte(s) generated.", nullptr, static_cast<int>(text.toUtf8().size())));
    emit generated(text);
}

void SamplingDialog::showError(const QString& message)
{
    m_status->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_status->setText(message);
    emit failed(message);
}

} // namespace mantissa::ui

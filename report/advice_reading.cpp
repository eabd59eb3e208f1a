#include "report/advice_reading.h"

#include <cmath>

namespace mantissa::report {

namespace {

// +1: the advice puts more FLOPs low; -1: fewer; 0: the same.
int flopOrder(double advice, double rule)
{
    return std::abs(advice - rule) < kSameFlopShare ? 0 : (advice > rule ? 1 : -1);
}

// +1: the advice's gap is smaller (the rule's loss is worse); -1: larger; 0: equivalent;
// 2: not told apart.
int gapOrder(const QString& ruleVerdict)
{
    if (ruleVerdict == QLatin1String("worse"))
        return 1;
    if (ruleVerdict == QLatin1String("better"))
        return -1;
    if (ruleVerdict == QLatin1String("equivalent"))
        return 0;
    return 2;
}

} // namespace

AdviceAgainstRule adviceAgainstRule(double adviceFlopShare, double ruleFlopShare, const QString& ruleVerdict)
{
    const int flops = flopOrder(adviceFlopShare, ruleFlopShare);
    const int gap = gapOrder(ruleVerdict);
    if (gap == 2)
        return AdviceAgainstRule::Undecided;
    if ((flops >= 0 && gap == 1) || (flops > 0 && gap == 0))
        return AdviceAgainstRule::AdviceBetter;
    if ((flops <= 0 && gap == -1) || (flops < 0 && gap == 0))
        return AdviceAgainstRule::RuleBetter;
    if (flops == 0 && gap == 0)
        return AdviceAgainstRule::Same;
    return AdviceAgainstRule::TradeOff;
}

QString adviceAgainstRuleText(double adviceFlopShare, double ruleFlopShare, const QString& ruleVerdict)
{
    QString outcome;
    switch (adviceAgainstRule(adviceFlopShare, ruleFlopShare, ruleVerdict)) {
    case AdviceAgainstRule::AdviceBetter: outcome = QStringLiteral("the advice is better"); break;
    case AdviceAgainstRule::RuleBetter: outcome = QStringLiteral("the rule is better"); break;
    case AdviceAgainstRule::Same: outcome = QStringLiteral("the same"); break;
    case AdviceAgainstRule::TradeOff: outcome = QStringLiteral("a trade-off"); break;
    case AdviceAgainstRule::Undecided: outcome = QStringLiteral("undecided: more seeds would tell"); break;
    }
    const int flops = flopOrder(adviceFlopShare, ruleFlopShare);
    const QString flopWords = flops > 0   ? QStringLiteral("more FLOPs low")
                              : flops < 0 ? QStringLiteral("fewer FLOPs low")
                                          : QStringLiteral("the same FLOPs low");
    const int gap = gapOrder(ruleVerdict);
    const QString gapWords = gap == 1    ? QStringLiteral("a smaller gap")
                             : gap == -1 ? QStringLiteral("a larger gap")
                             : gap == 0  ? QStringLiteral("an equivalent gap")
                                         : QStringLiteral("a gap not told apart");
    return QStringLiteral("%1: %2 and %3").arg(outcome, flopWords, gapWords);
}

} // namespace mantissa::report

#pragma once
// How a precision advice reads against a rule of thumb, once both were trained over seeds: the
// share of FLOPs each put in the low format, and the verdict on the train loss between them. The
// advice is better when it puts more FLOPs low at a gap no larger, or the same FLOPs at a smaller
// gap; the rule is better the other way round; a difference each way is a trade-off; and where
// the seeds could not tell the gaps apart, more seeds decide.
#include <QString>

namespace mantissa::report {

enum class AdviceAgainstRule { AdviceBetter, RuleBetter, Same, TradeOff, Undecided };

// Two FLOP shares closer than this count as the same.
constexpr double kSameFlopShare = 5e-4;

// `ruleVerdict`: the rule's train loss against the advice's, as sweep::verdictName says it
// ("worse": the rule's loss is higher, the advice's gap smaller; "better", "equivalent",
// "inconclusive" or "undecidable").
AdviceAgainstRule adviceAgainstRule(double adviceFlopShare, double ruleFlopShare, const QString& ruleVerdict);

// "the advice is better: more FLOPs low and a smaller gap".
QString adviceAgainstRuleText(double adviceFlopShare, double ruleFlopShare, const QString& ruleVerdict);

} // namespace mantissa::report

// The names of the guards the activation-checkpoint passes share: each pass records a
// refusal under one of these (check::Decisions), and the decision-coverage suites look
// them up by name, so a guard keeps one spelling across passes.
#pragma once

namespace passcheck::passes::ac_guards {

inline constexpr const char* kMustStayInForward = "must-stay-in-forward";
inline constexpr const char* kReadsValueWrittenLater = "reads-value-written-later";
inline constexpr const char* kWritesSavedStorage = "writes-saved-storage";

}  // namespace passcheck::passes::ac_guards

//! The kinds of control-flow edge, named as in the DCFG format (section 2.5 of the v1.00 spec).

use std::fmt;
use std::str::FromStr;

macro_rules! edge_kinds {
    ($($variant:ident => $name:literal,)*) => {
        /// The kind of a control-flow edge.
        ///
        /// The names are the DCFG `EDGE_TYPE` strings: the 26 the spec's prose lists, plus the
        /// `INTERRUPT*` and `UNKNOWN_IMAGE_BYPASS` kinds its example table and other producers use.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EdgeKind {
            $($variant,)*
        }

        impl EdgeKind {
            /// Every kind, in the order DCFG writers list them.
            pub const ALL: &'static [EdgeKind] = &[$(EdgeKind::$variant,)*];

            /// The DCFG `EDGE_TYPE` string.
            pub fn as_str(self) -> &'static str {
                match self { $(EdgeKind::$variant => $name,)* }
            }
        }

        impl FromStr for EdgeKind {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s { $($name => Ok(EdgeKind::$variant),)* _ => Err(()) }
            }
        }
    };
}

edge_kinds! {
    Entry => "ENTRY",
    Exit => "EXIT",
    Call => "CALL",
    DirectCall => "DIRECT_CALL",
    IndirectCall => "INDIRECT_CALL",
    Return => "RETURN",
    CallBypass => "CALL_BYPASS",
    Branch => "BRANCH",
    ConditionalBranch => "CONDITIONAL_BRANCH",
    UnconditionalBranch => "UNCONDITIONAL_BRANCH",
    DirectBranch => "DIRECT_BRANCH",
    IndirectBranch => "INDIRECT_BRANCH",
    DirectConditionalBranch => "DIRECT_CONDITIONAL_BRANCH",
    IndirectConditionalBranch => "INDIRECT_CONDITIONAL_BRANCH",
    DirectUnconditionalBranch => "DIRECT_UNCONDITIONAL_BRANCH",
    IndirectUnconditionalBranch => "INDIRECT_UNCONDITIONAL_BRANCH",
    Rep => "REP",
    FallThrough => "FALL_THROUGH",
    SystemCall => "SYSTEM_CALL",
    SystemReturn => "SYSTEM_RETURN",
    SystemCallBypass => "SYSTEM_CALL_BYPASS",
    ContextChange => "CONTEXT_CHANGE",
    ContextChangeReturn => "CONTEXT_CHANGE_RETURN",
    ContextChangeBypass => "CONTEXT_CHANGE_BYPASS",
    ExcludedCodeBypass => "EXCLUDED_CODE_BYPASS",
    Interrupt => "INTERRUPT",
    InterruptReturn => "INTERRUPT_RETURN",
    InterruptBypass => "INTERRUPT_BYPASS",
    UnknownImageBypass => "UNKNOWN_IMAGE_BYPASS",
    Unknown => "UNKNOWN",
}

impl EdgeKind {
    /// Transfers into another routine: calls, system calls, context changes, interrupts.
    pub fn is_call(self) -> bool {
        use EdgeKind::*;
        matches!(self, Call | DirectCall | IndirectCall | SystemCall | ContextChange | Interrupt)
    }

    /// Transfers back out of a called routine.
    pub fn is_return(self) -> bool {
        use EdgeKind::*;
        matches!(self, Return | SystemReturn | ContextChangeReturn | InterruptReturn)
    }

    /// Fabricated intra-routine edges from a call site to its return site.
    pub fn is_bypass(self) -> bool {
        use EdgeKind::*;
        matches!(
            self,
            CallBypass
                | SystemCallBypass
                | ContextChangeBypass
                | ExcludedCodeBypass
                | InterruptBypass
                | UnknownImageBypass
        )
    }

    /// Edges that stay inside a routine: branches, fall-throughs, REP repeats and bypasses.
    /// Routine discovery follows exactly these.
    pub fn is_intra_routine(self) -> bool {
        !(self.is_call() || self.is_return() || matches!(self, EdgeKind::Entry | EdgeKind::Exit))
            && self != EdgeKind::Unknown
    }

    /// A branch whose other way is the fall-through (a conditional's taken edge).
    pub fn is_conditional(self) -> bool {
        use EdgeKind::*;
        matches!(self, ConditionalBranch | DirectConditionalBranch | IndirectConditionalBranch)
    }

    /// Any branch kind (not calls, returns, fall-throughs or bypasses).
    pub fn is_branch(self) -> bool {
        use EdgeKind::*;
        matches!(
            self,
            Branch
                | ConditionalBranch
                | UnconditionalBranch
                | DirectBranch
                | IndirectBranch
                | DirectConditionalBranch
                | IndirectConditionalBranch
                | DirectUnconditionalBranch
                | IndirectUnconditionalBranch
        )
    }
}

#[allow(clippy::derivable_impls)] // the enum is declared by a macro
impl Default for EdgeKind {
    fn default() -> Self {
        EdgeKind::Unknown
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an edge does for a reader of a control-flow graph, by kind: how pictures of the graph
/// (DOT, GraphML) class and label it. A back edge is one that closes a loop (found by
/// `cfghub_analysis::loops`, or stated by the format).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeClass {
    FallThrough,
    /// A branch taken (conditional or not).
    Taken,
    /// A branch back to a loop head from inside its loop.
    Back,
    Bypass,
    Rep,
    Call,
    Return,
    Other,
}

impl EdgeClass {
    pub fn of(kind: EdgeKind, back: bool) -> EdgeClass {
        if back {
            EdgeClass::Back
        } else if kind == EdgeKind::FallThrough {
            EdgeClass::FallThrough
        } else if kind.is_branch() {
            EdgeClass::Taken
        } else if kind.is_bypass() {
            EdgeClass::Bypass
        } else if kind == EdgeKind::Rep {
            EdgeClass::Rep
        } else if kind.is_call() {
            EdgeClass::Call
        } else if kind.is_return() {
            EdgeClass::Return
        } else {
            EdgeClass::Other
        }
    }

    /// The short word shown on the edge.
    pub fn word(self, kind: EdgeKind) -> &'static str {
        match self {
            EdgeClass::FallThrough => "fall-through",
            EdgeClass::Back => "back",
            EdgeClass::Taken if kind.is_conditional() => "taken",
            EdgeClass::Taken => "jump",
            EdgeClass::Bypass => "bypass",
            EdgeClass::Rep => "rep",
            EdgeClass::Call => "call",
            EdgeClass::Return => "return",
            EdgeClass::Other => "edge",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_classes_are_disjoint() {
        assert_eq!(EdgeKind::ALL.len(), 30);
        for &k in EdgeKind::ALL {
            assert_eq!(k.as_str().parse::<EdgeKind>(), Ok(k));
            let classes = [k.is_call(), k.is_return(), k.is_bypass()];
            assert!(classes.iter().filter(|&&c| c).count() <= 1, "{k}");
        }
        assert!(EdgeKind::CallBypass.is_intra_routine());
        assert!(!EdgeKind::DirectCall.is_intra_routine());
        assert!("BOGUS".parse::<EdgeKind>().is_err());
    }
}

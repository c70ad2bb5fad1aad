//! The kinds of control-flow edge, named as in the DCFG format (section 2.5 of the v1.00 spec).

use std::fmt;
use std::str::FromStr;

macro_rules! edge_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,)*) => {
        /// The kind of a control-flow edge.
        ///
        /// The names are the DCFG `EDGE_TYPE` strings: the 26 the spec's prose lists, plus the
        /// `INTERRUPT*` and `UNKNOWN_IMAGE_BYPASS` kinds its example table and other producers use.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EdgeKind {
            $($(#[doc = $doc])* $variant,)*
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
    /// Into the first block a thread runs, from the `START` node.
    Entry => "ENTRY",
    /// From the last block a thread runs, to the `END` node.
    Exit => "EXIT",
    /// A call, direct or indirect: into another routine's entry.
    Call => "CALL",
    /// A call to an address the instruction states.
    DirectCall => "DIRECT_CALL",
    /// A call through a register or memory (a function pointer, a virtual call).
    IndirectCall => "INDIRECT_CALL",
    /// From a routine's return instruction back to its call's return site.
    Return => "RETURN",
    /// Fabricated inside the caller: from the block of a call to its return site.
    CallBypass => "CALL_BYPASS",
    /// A taken branch whose kind the producer did not say.
    Branch => "BRANCH",
    /// A conditional branch taken, direct or indirect.
    ConditionalBranch => "CONDITIONAL_BRANCH",
    /// An unconditional jump, direct or indirect.
    UnconditionalBranch => "UNCONDITIONAL_BRANCH",
    /// A taken branch to an address the instruction states, conditional or not.
    DirectBranch => "DIRECT_BRANCH",
    /// A taken branch through a register or memory, conditional or not.
    IndirectBranch => "INDIRECT_BRANCH",
    /// A conditional branch to an address the instruction states, taken.
    DirectConditionalBranch => "DIRECT_CONDITIONAL_BRANCH",
    /// A conditional branch through a register or memory, taken.
    IndirectConditionalBranch => "INDIRECT_CONDITIONAL_BRANCH",
    /// An unconditional jump to an address the instruction states.
    DirectUnconditionalBranch => "DIRECT_UNCONDITIONAL_BRANCH",
    /// An unconditional jump through a register or memory (a switch table, a tail call).
    IndirectUnconditionalBranch => "INDIRECT_UNCONDITIONAL_BRANCH",
    /// From a `REP`-prefixed string instruction's block back to itself: one more iteration.
    Rep => "REP",
    /// From a block to the one right after it in memory, without a branch taken.
    FallThrough => "FALL_THROUGH",
    /// A system call instruction's transfer into the system.
    SystemCall => "SYSTEM_CALL",
    /// The return from a system call to the instruction after it.
    SystemReturn => "SYSTEM_RETURN",
    /// Fabricated inside the caller: from a system call to the instruction after it.
    SystemCallBypass => "SYSTEM_CALL_BYPASS",
    /// An asynchronous transfer, such as a signal delivered to its handler.
    ContextChange => "CONTEXT_CHANGE",
    /// The return from a context change (a signal handler's return) to the interrupted code.
    ContextChangeReturn => "CONTEXT_CHANGE_RETURN",
    /// Fabricated: from where a context change interrupted the code to where it resumed.
    ContextChangeBypass => "CONTEXT_CHANGE_BYPASS",
    /// Over a region of code left out of the graph, from where it was entered to where it was left.
    ExcludedCodeBypass => "EXCLUDED_CODE_BYPASS",
    /// A hardware or software interrupt's transfer to its handler.
    Interrupt => "INTERRUPT",
    /// The return from an interrupt handler to the interrupted code.
    InterruptReturn => "INTERRUPT_RETURN",
    /// Fabricated: from where an interrupt struck to where the code resumed.
    InterruptBypass => "INTERRUPT_BYPASS",
    /// Over code in an image the producer did not record, from where it was entered to where it was left.
    UnknownImageBypass => "UNKNOWN_IMAGE_BYPASS",
    /// A transfer the producer could not classify; also what an unknown `EDGE_TYPE` name reads as.
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
    /// Into the next block in memory, no branch taken.
    FallThrough,
    /// A branch taken (conditional or not).
    Taken,
    /// A branch back to a loop head from inside its loop.
    Back,
    /// A fabricated edge over a call, system call, context change, interrupt or left-out code.
    Bypass,
    /// Another iteration of a `REP`-prefixed string instruction.
    Rep,
    /// Into another routine: a call, system call, context change or interrupt.
    Call,
    /// Back out of a called routine.
    Return,
    /// Anything else: `ENTRY`, `EXIT` and `UNKNOWN` edges.
    Other,
}

impl EdgeClass {
    /// The class of an edge of `kind`; `back` when it closes a loop, which wins over its kind.
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

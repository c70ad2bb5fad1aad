//! One `PERF_RECORD_SAMPLE` body, read field by field as the event's `sample_type` lays it
//! out (perf_event_open(2)):
//!
//! ```text
//! IDENTIFIER id | IP ip | TID pid, tid | TIME time | ADDR addr | ID id | STREAM_ID id
//! | CPU cpu, res | PERIOD period | READ values | CALLCHAIN nr, ips[nr] | RAW size, data
//! | BRANCH_STACK nr, [hw_idx], {from, to, flags}[nr]
//! | REGS_USER abi, regs[weight(sample_regs_user)] | STACK_USER size, data[size], dyn_size | ...
//! ```
//!
//! Every count is checked against the bytes the record has. The fields after the user stack
//! (weights, data sources) are not needed and not read.

use super::layout::Order;

const IP: u64 = 1 << 0;
const TID: u64 = 1 << 1;
const TIME: u64 = 1 << 2;
const ADDR: u64 = 1 << 3;
const READ: u64 = 1 << 4;
const CALLCHAIN: u64 = 1 << 5;
const ID: u64 = 1 << 6;
const CPU: u64 = 1 << 7;
const PERIOD: u64 = 1 << 8;
const STREAM_ID: u64 = 1 << 9;
const RAW: u64 = 1 << 10;
const BRANCH_STACK: u64 = 1 << 11;
const REGS_USER: u64 = 1 << 12;
const STACK_USER: u64 = 1 << 13;
const IDENTIFIER: u64 = 1 << 16;

const READ_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const READ_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const READ_ID: u64 = 1 << 2;
const READ_GROUP: u64 = 1 << 3;
const READ_LOST: u64 = 1 << 4;

/// `branch_sample_type` bit: each branch stack starts with the hardware index.
const BRANCH_HW_INDEX: u64 = 1 << 17;

/// How one event's samples are laid out.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The attribute's `sample_type` bits: which fields a sample holds, in the order above.
    pub sample_type: u64,
    /// The attribute's `read_format` bits: how the `READ` field's values are laid out.
    pub read_format: u64,
    /// The attribute's `branch_sample_type` bits (whether branch stacks carry `hw_idx`).
    pub branch_sample_type: u64,
    /// The attribute's `sample_regs_user` bits: which user registers `REGS_USER` holds, one
    /// word each in the order of their bits.
    pub regs_user: u64,
}

/// What a sample says that the model uses; the call chain and branch stack are left in the
/// record's bytes and read through [`Sample::callchain`] and [`Sample::branch`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample<'a> {
    /// The sampled instruction's address (`IP`); `None` when `sample_type` lacks it.
    pub ip: Option<u64>,
    /// Process id (`TID` field); `None` when `sample_type` lacks it.
    pub pid: Option<i32>,
    /// Thread id (`TID` field); `None` when `sample_type` lacks it.
    pub tid: Option<i32>,
    /// The sample's weight (`PERIOD`); `None` when `sample_type` lacks it and the event's fixed
    /// period applies.
    pub period: Option<u64>,
    callchain: &'a [u8],
    branches: &'a [u8],
    /// The user registers (`REGS_USER`), one word per bit of [`Layout::regs_user`]; empty when
    /// the sample has none (`abi` 0: a kernel thread).
    user_regs: &'a [u8],
    /// The copy of the user stack from the stack pointer up (`STACK_USER`), as much of it as
    /// the kernel could copy (`dyn_size`).
    pub user_stack: &'a [u8],
}

/// One branch record: the branch's address, its target, and whether it was mispredicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// Address of the branch instruction.
    pub from: u64,
    /// Address the branch went to.
    pub to: u64,
    /// Whether the `flags` word has the mispredict bit set.
    pub mispredicted: bool,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    order: Order,
}

impl<'a> Cursor<'a> {
    fn u64(&mut self) -> Option<u64> {
        let v = self.bytes.get(self.at..self.at + 8).map(|b| self.order.u64(b))?;
        self.at += 8;
        Some(v)
    }
    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.at.checked_add(n)?;
        let part = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(part)
    }
    fn skip(&mut self, n: u64) -> Option<()> {
        self.take(n).map(|_| ())
    }
}

impl<'a> Sample<'a> {
    /// Reads a sample body; `None` when a field runs past the record's end.
    pub fn parse(body: &'a [u8], layout: Layout, order: Order) -> Option<Sample<'a>> {
        let t = layout.sample_type;
        let mut c = Cursor { bytes: body, at: 0, order };
        let mut s = Sample::default();
        let has = |bit: u64| t & bit != 0;
        if has(IDENTIFIER) {
            c.skip(8)?;
        }
        if has(IP) {
            s.ip = Some(c.u64()?);
        }
        if has(TID) {
            let b = c.take(8)?;
            s.pid = Some(order.u32(b) as i32);
            s.tid = Some(order.u32(&b[4..]) as i32);
        }
        for bit in [TIME, ADDR, ID, STREAM_ID, CPU] {
            if has(bit) {
                c.skip(8)?;
            }
        }
        if has(PERIOD) {
            s.period = Some(c.u64()?);
        }
        if has(READ) {
            let f = layout.read_format;
            let per_value = 8 * (1 + u64::from(f & READ_ID != 0) + u64::from(f & READ_LOST != 0));
            let times = 8
                * (u64::from(f & READ_TOTAL_TIME_ENABLED != 0) + u64::from(f & READ_TOTAL_TIME_RUNNING != 0));
            if f & READ_GROUP != 0 {
                let nr = c.u64()?;
                c.skip(times)?;
                c.skip(nr.checked_mul(per_value)?)?;
            } else {
                c.skip(8)?;
                c.skip(times)?;
                c.skip(per_value - 8)?;
            }
        }
        if has(CALLCHAIN) {
            let nr = c.u64()?;
            s.callchain = c.take(nr.checked_mul(8)?)?;
        }
        if has(RAW) {
            let size = order.u32(c.take(4)?);
            c.skip(u64::from(size))?;
        }
        if has(BRANCH_STACK) {
            let nr = c.u64()?;
            if layout.branch_sample_type & BRANCH_HW_INDEX != 0 {
                c.skip(8)?;
            }
            s.branches = c.take(nr.checked_mul(24)?)?;
        }
        if has(REGS_USER) {
            let abi = c.u64()?;
            if abi != 0 {
                s.user_regs = c.take(8 * u64::from(layout.regs_user.count_ones()))?;
            }
        }
        if has(STACK_USER) {
            let size = c.u64()?;
            if size != 0 {
                let data = c.take(size)?;
                let copied = c.u64()?;
                s.user_stack = &data[..usize::try_from(copied).map_or(data.len(), |n| n.min(data.len()))];
            }
        }
        Some(s)
    }

    /// User register `number` (its bit in [`Layout::regs_user`], perf's `PERF_REG_*`
    /// numbering), when the sample has it.
    pub fn user_register(&self, layout: &Layout, number: u32, order: Order) -> Option<u64> {
        let bit = 1u64.checked_shl(number)?;
        if self.user_regs.is_empty() || layout.regs_user & bit == 0 {
            return None;
        }
        let at = 8 * (layout.regs_user & (bit - 1)).count_ones() as usize;
        self.user_regs.get(at..at + 8).map(|b| order.u64(b))
    }

    /// The call chain's addresses (context markers included), leaf first.
    pub(crate) fn callchain(&self, order: Order) -> impl Iterator<Item = u64> + 'a {
        self.callchain.chunks_exact(8).map(move |b| order.u64(b))
    }

    /// Whether the sample has a call chain at all.
    pub(crate) fn has_callchain(&self) -> bool {
        !self.callchain.is_empty()
    }

    /// The branch stack, newest branch first.
    pub fn branches(&self, order: Order) -> impl Iterator<Item = Branch> + 'a {
        self.branches.chunks_exact(24).map(move |b| Branch {
            from: order.u64(b),
            to: order.u64(&b[8..]),
            mispredicted: order.u64(&b[16..]) & 1 != 0,
        })
    }

    /// Branch records in the stack.
    pub(crate) fn branch_count(&self) -> usize {
        self.branches.len() / 24
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn reads_ip_tid_period_callchain_and_branches() {
        let layout = Layout {
            sample_type: IP | TID | TIME | PERIOD | CALLCHAIN | BRANCH_STACK,
            read_format: 0,
            branch_sample_type: 0,
            regs_user: 0,
        };
        let body = words(&[0x401000, (7u64 << 32) | 5, 99, 250, 2, 0x401000, 0x402000, 1, 0x10, 0x20, 1]);
        let s = Sample::parse(&body, layout, Order::Little).unwrap();
        assert_eq!((s.ip, s.pid, s.tid, s.period), (Some(0x401000), Some(5), Some(7), Some(250)));
        assert_eq!(s.callchain(Order::Little).collect::<Vec<_>>(), vec![0x401000, 0x402000]);
        assert_eq!(
            s.branches(Order::Little).collect::<Vec<_>>(),
            vec![Branch { from: 0x10, to: 0x20, mispredicted: true }]
        );
    }

    #[test]
    fn counts_past_the_end_are_refused() {
        let layout = Layout { sample_type: CALLCHAIN, read_format: 0, branch_sample_type: 0, regs_user: 0 };
        assert!(Sample::parse(&words(&[u64::MAX, 1]), layout, Order::Little).is_none());
        assert!(Sample::parse(&words(&[3, 1, 2]), layout, Order::Little).is_none());
        let stack = Layout { sample_type: STACK_USER, read_format: 0, branch_sample_type: 0, regs_user: 0 };
        assert!(Sample::parse(&words(&[u64::MAX, 1]), stack, Order::Little).is_none());
        assert!(Sample::parse(&words(&[16, 1, 2]), stack, Order::Little).is_none());
    }

    #[test]
    fn reads_user_registers_by_their_bits_and_the_stack_the_kernel_copied() {
        // Registers BP (6), SP (7) and IP (8) of perf's x86-64 numbering; a 24-byte stack
        // copy of which 16 bytes were copied.
        let layout = Layout {
            sample_type: IP | REGS_USER | STACK_USER,
            read_format: 0,
            branch_sample_type: 0,
            regs_user: (1 << 6) | (1 << 7) | (1 << 8),
        };
        let body = words(&[0x401000, 2, 0x7ff0, 0x7fe0, 0x401000, 24, 10, 20, 30, 16]);
        let s = Sample::parse(&body, layout, Order::Little).unwrap();
        let reg = |n| s.user_register(&layout, n, Order::Little);
        assert_eq!((reg(6), reg(7), reg(8), reg(0)), (Some(0x7ff0), Some(0x7fe0), Some(0x401000), None));
        assert_eq!(s.user_stack, &words(&[10, 20])[..]);
        // A kernel thread's sample: abi 0, no registers; no stack.
        let body = words(&[0xffff_ffff_8100_0000, 0, 0]);
        let s = Sample::parse(&body, layout, Order::Little).unwrap();
        assert_eq!((s.user_register(&layout, 8, Order::Little), s.user_stack.len()), (None, 0));
    }
}

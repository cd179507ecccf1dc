// SPDX-License-Identifier: GPL-2.0

//! KTAP output of the test modules that run their checks at load: one
//! `ok N desc` or `not ok N desc` line in the kernel log per check, which the
//! guest tests (`ktap_module` in `tools/testing/vm/guest-lib.sh`) turn into
//! results of their own. Included with `#[path]` by each test module.

use kernel::prelude::*;

/// The checks run so far.
pub(crate) struct Ktap {
    pub(crate) n: u32,
    pub(crate) failed: u32,
}

impl Ktap {
    /// Starts the KTAP output.
    pub(crate) fn new() -> Self {
        pr_info!("KTAP version 1\n");
        Ktap { n: 0, failed: 0 }
    }

    /// One check.
    pub(crate) fn check(&mut self, ok: bool, desc: &str) {
        self.n += 1;
        if ok {
            pr_info!("ok {} {}\n", self.n, desc);
        } else {
            self.failed += 1;
            pr_info!("not ok {} {}\n", self.n, desc);
        }
    }

    /// One check of a value, which is printed when it is not the one wanted.
    pub(crate) fn check_eq<T: PartialEq + core::fmt::Debug>(
        &mut self,
        got: T,
        want: T,
        desc: &str,
    ) {
        if got != want {
            pr_info!("# {}: got {:?}, want {:?}\n", desc, got, want);
        }
        self.check(got == want, desc);
    }

    /// Ends the output with the plan; `EINVAL` if a check failed, so that a
    /// broken run fails the module's load and can never look like a pass.
    pub(crate) fn finish(self, setup: Result) -> Result {
        let mut t = self;
        if let Err(e) = setup {
            t.check(false, "setup (allocation)");
            pr_info!("# error {}\n", e.to_errno());
        }
        pr_info!("1..{}\n", t.n);
        pr_info!("# {} passed, {} failed\n", t.n - t.failed, t.failed);
        if t.failed > 0 {
            return Err(EINVAL);
        }
        Ok(())
    }
}

//! The clock and counters of one template execution, for the checks the engines cannot make.
//!
//! Both engines render synchronously on the calling thread, so the execution's meter lives in a
//! thread-local set for the duration of [`metered`]. The hooks the engines do call (every Go
//! function, every write of output, and for tera the `__kcp_tick` and `__kcp_size` calls
//! [`super::tera_budget`] plants in the source) ask it whether the execution is still within
//! its [`Budget`]: its time, its loop iterations and the size of any value it keeps.

use std::cell::RefCell;
use std::time::Instant;

use super::options::Budget;

/// What one execution has used.
#[derive(Debug, Clone, Copy)]
struct Meter {
    budget: Budget,
    deadline: Instant,
    iterations: u64,
}

thread_local! {
    static ACTIVE: RefCell<Option<Meter>> = const { RefCell::new(None) };
}

/// Runs `render` with a fresh meter for `budget` (the previous one restored afterwards, so a
/// render inside a render keeps its own).
pub(crate) fn metered<T>(budget: &Budget, render: impl FnOnce() -> T) -> T {
    let meter = Meter {
        budget: *budget,
        deadline: Instant::now() + budget.max_duration,
        iterations: 0,
    };
    let previous = ACTIVE.with(|a| a.borrow_mut().replace(meter));
    let result = render();
    ACTIVE.with(|a| *a.borrow_mut() = previous);
    result
}

fn with_meter<T>(f: impl FnOnce(&mut Meter) -> Result<T, String>, outside: T) -> Result<T, String> {
    ACTIVE.with(|a| match a.borrow_mut().as_mut() {
        Some(meter) => f(meter),
        None => Ok(outside),
    })
}

/// `Err` once the execution has run longer than its budget allows.
pub(crate) fn check_time() -> Result<(), String> {
    with_meter(
        |m| {
            if Instant::now() > m.deadline {
                Err(format!(
                    "execution budget exhausted: the template ran longer than {:?}",
                    m.budget.max_duration
                ))
            } else {
                Ok(())
            }
        },
        (),
    )
}

/// Counts one loop iteration; `Err` past the iteration or time budget.
pub(crate) fn tick() -> Result<(), String> {
    with_meter(
        |m| {
            m.iterations += 1;
            if m.iterations > m.budget.max_range_iterations {
                return Err(format!(
                    "execution budget exhausted: more than {} loop iterations",
                    m.budget.max_range_iterations
                ));
            }
            Ok(())
        },
        (),
    )?;
    check_time()
}

/// `Err` when a string of `bytes` bytes or a list of `items` items exceeds the budget.
pub(crate) fn check_size(bytes: usize, items: usize) -> Result<(), String> {
    with_meter(
        |m| {
            if bytes > m.budget.max_output_bytes {
                return Err(format!(
                    "execution budget exhausted: a value of {bytes} bytes is larger than {} bytes",
                    m.budget.max_output_bytes
                ));
            }
            if items > m.budget.max_list_items {
                return Err(format!(
                    "execution budget exhausted: a collection of {items} items is larger than {}",
                    m.budget.max_list_items
                ));
            }
            Ok(())
        },
        (),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn budget(iterations: u64, duration: Duration) -> Budget {
        Budget {
            max_range_iterations: iterations,
            max_duration: duration,
            ..Budget::default()
        }
    }

    #[test]
    fn outside_an_execution_everything_passes() {
        assert!(tick().is_ok());
        assert!(check_size(usize::MAX, usize::MAX).is_ok());
    }

    #[test]
    fn iterations_past_the_budget_fail() {
        let result = metered(&budget(3, Duration::from_secs(60)), || {
            (0..4).map(|_| tick()).collect::<Vec<_>>()
        });
        assert!(result[..3].iter().all(Result::is_ok));
        assert!(
            result[3]
                .as_ref()
                .unwrap_err()
                .contains("more than 3 loop iterations")
        );
    }

    #[test]
    fn time_past_the_budget_fails() {
        let err = metered(&budget(10, Duration::ZERO), || {
            std::thread::sleep(Duration::from_millis(2));
            check_time()
        });
        assert!(err.unwrap_err().contains("ran longer than"));
    }

    #[test]
    fn a_nested_execution_keeps_its_own_meter() {
        let outer = budget(1, Duration::from_secs(60));
        let inner = budget(100, Duration::from_secs(60));
        metered(&outer, || {
            assert!(tick().is_ok());
            metered(&inner, || assert!(tick().is_ok()));
            assert!(tick().is_err(), "the outer count went on from 1");
        });
    }
}

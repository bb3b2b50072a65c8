//! The capacity queue: at most `maxActive` runs of one state root are active at once, the
//! others wait in arrival order. No daemon keeps it: `<runs>/.capacity/` holds one ticket per
//! active run (named `<16-digit arrival number>-<runId>`, see [`ticket`]), and every decision
//! — taking a ticket, reclaiming the tickets of dead runners, promoting waiting tickets while
//! fewer than their cap hold a slot — is made by whoever looks, under an `flock` on
//! `<runs>/.capacity/lock` ([`queue`]). The launching host takes the ticket; the runner of a
//! waiting ticket re-evaluates whenever a ticket goes away and on a short tick (a killed
//! runner's ticket does not delete itself), and removes its own ticket when its steps end.
//!
//! Every run takes a ticket, capped or not (an uncapped one holds a slot at once), so a capped
//! run counts every active run of the root.

pub mod queue;
pub mod ticket;

pub use queue::{Admission, CapacityQueue, QueueLock, TicketRequest, promote, queue_position};
pub use ticket::{Ticket, parse_ticket_name, ticket_name};

#[cfg(test)]
mod tests;

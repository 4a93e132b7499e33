//! Token identities: the admin and the restricted users a run hands out. Both servers read one
//! token file at start, so the set is fixed per bed; tokens are random per bed.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};

/// The restricted users every bed declares: one per binary (as its deploy RBAC names it) and
/// two plain users for tests of their own. None is in any group beyond `system:authenticated`.
pub const RESTRICTED_USERS: &[&str] = &[
    "kcp-init-agent",
    "kcp-api-syncagent",
    "kcp-operator",
    "capi-provider-agent",
    "capi-provider-kind",
    "user-1",
    "user-2",
];

/// The admin user (group `system:masters`).
pub const ADMIN: &str = "testbed-admin";

/// kcp's administrator in the token file (group `system:kcp:admin`, as kcp's own `kcp-admin`):
/// unlike `system:masters` users, kcp records it as the owner of the workspaces it creates,
/// which the initializingworkspaces view needs ("LogicalCluster ... had no user recorded"
/// otherwise), and unlike kcp's `kcp-admin` its token outlives a restart of kcp.
pub const KCP_ADMIN: &str = "testbed-kcp-admin";

/// A user and its bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user name the servers authenticate.
    pub user: String,
    /// Its bearer token.
    pub token: String,
}

/// The identities of one bed.
#[derive(Debug, Clone)]
pub struct Identities {
    /// The admin.
    pub admin: Identity,
    /// kcp's administrator (see [`KCP_ADMIN`]).
    pub kcp_admin: Identity,
    /// The restricted users, in [`RESTRICTED_USERS`] order.
    pub users: Vec<Identity>,
}

impl Identities {
    /// Fresh random tokens for the admin and every restricted user.
    pub fn generate() -> Self {
        let token = || format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        Self {
            admin: Identity {
                user: ADMIN.to_string(),
                token: token(),
            },
            kcp_admin: Identity {
                user: KCP_ADMIN.to_string(),
                token: token(),
            },
            users: RESTRICTED_USERS
                .iter()
                .map(|user| Identity {
                    user: (*user).to_string(),
                    token: token(),
                })
                .collect(),
        }
    }

    /// The restricted user named `user`.
    pub fn user(&self, user: &str) -> Option<&Identity> {
        self.users.iter().find(|i| i.user == user)
    }

    /// The static token file both servers read (`token,user,uid,"groups"`).
    pub fn token_file(&self) -> String {
        let mut csv = String::new();
        let _ = writeln!(
            csv,
            "{},{},{},\"system:masters\"",
            self.admin.token, self.admin.user, self.admin.user
        );
        let _ = writeln!(
            csv,
            "{},{},{},\"system:kcp:admin\"",
            self.kcp_admin.token, self.kcp_admin.user, self.kcp_admin.user
        );
        for identity in &self.users {
            let _ = writeln!(
                csv,
                "{},{},{}",
                identity.token, identity.user, identity.user
            );
        }
        csv
    }

    /// Writes [`Self::token_file`] to `path`.
    pub fn write_token_file(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.token_file())
            .map_err(|e| Error::io("test bed", format!("writing {}", path.display()), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_admin_is_in_system_masters() {
        let ids = Identities::generate();
        let csv = ids.token_file();
        let masters: Vec<&str> = csv
            .lines()
            .filter(|l| l.contains("system:masters"))
            .collect();
        assert_eq!(masters.len(), 1);
        assert!(masters[0].contains(ADMIN));
    }

    #[test]
    fn every_restricted_user_has_its_own_token() {
        let ids = Identities::generate();
        let mut tokens: Vec<&str> = ids.users.iter().map(|i| i.token.as_str()).collect();
        tokens.push(&ids.admin.token);
        tokens.push(&ids.kcp_admin.token);
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), RESTRICTED_USERS.len() + 2);
    }
}

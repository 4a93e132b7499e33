//! Writing the spec of a destination object: the three-way merge of
//! [`crate::merge::plan_spec_write`] sent as a merge patch, or as a full update when there is
//! no last-known state. One writer for primaries' local copies ([`super::sync`]) and related
//! objects' copies ([`super::related`]); the callers read and store the last-known state.

use kcp_core::kube::api::DynamicObject;
use kcp_core::{ObjectClient, ObjectPatch, ObjectRef, PatchOptions, Subresource};
use serde_json::Value;

use super::dynamic_json::from_json;
use crate::error::{Error, Result};
use crate::merge::{SpecWrite, plan_spec_write};

/// The destination object of a spec sync and how its spec is written.
pub(crate) struct Destination<'a> {
    /// The cluster it lives in.
    pub client: &'a dyn ObjectClient,
    /// The object.
    pub target: &'a ObjectRef,
    /// Its subresource keys (`status`, `scale`), never part of the spec sync.
    pub subresources: &'a [&'static str],
    /// Whether a full update adds the source's labels and annotations (see
    /// [`plan_spec_write`]).
    pub carry_labels: bool,
    /// What error messages start with (`"spec.related[0] (x): "`), or empty.
    pub context: &'a str,
}

impl Destination<'_> {
    /// Brings the destination `live` to the source `current` (metadata stripped) from the
    /// last-known state `last`. Returns the server's answer, or `None` when nothing changed.
    pub async fn write_spec(
        &self,
        last: Option<Value>,
        current: &Value,
        live: &Value,
    ) -> Result<Option<DynamicObject>> {
        let plan = plan_spec_write(last, current, live, self.subresources, self.carry_labels);
        let (written, doing) = match plan {
            SpecWrite::Nothing => return Ok(None),
            SpecWrite::Patch(patch) => {
                let patch = ObjectPatch::Merge(patch);
                let options = PatchOptions::default();
                let written = self
                    .client
                    .patch(self.target, Subresource::Main, &patch, &options)
                    .await;
                (written, "patching")
            }
            SpecWrite::Replace(updated) => {
                let updated = from_json(updated)?;
                let written = self.client.replace(&updated, Subresource::Main).await;
                (written, "updating")
            }
        };
        written
            .map(Some)
            .map_err(|e| Error::core(format!("{}{doing} {}", self.context, self.target), e))
    }
}

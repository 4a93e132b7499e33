//! A cache of what an apiexport virtual workspace serves: the parsed APIExport and its
//! [`Registry`]. Without it every request through the virtual workspace parses the export and
//! every APIResourceSchema it names (schemas carry whole OpenAPI documents), which made the
//! simulator, not the client under test, the cost of a virtual-workspace request.
//!
//! An entry is valid while the export and every schema it names have the resourceVersions they
//! had when it was built (a lookup each, no parsing). Exports claiming resources of another
//! export (an identity hash) are not cached: their registry depends on that other export too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::export::Export;
use super::view::{At, registry};
use super::{exports, schemas};
use crate::resource::Registry;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

#[derive(Debug)]
struct Entry {
    export_rv: u64,
    schema_rvs: Vec<(String, Option<u64>)>,
    export: Arc<Export>,
    registry: Arc<Registry>,
}

/// Parsed exports and their registries, by (export cluster, export name).
#[derive(Debug, Default)]
pub struct ViewCache {
    entries: Mutex<HashMap<(String, String), Arc<Entry>>>,
}

fn schema_rvs(state: &State, export: &Export) -> Vec<(String, Option<u64>)> {
    export
        .resources
        .iter()
        .map(|r| {
            let rv = state
                .lookup(&export.cluster, &schemas(), "", &r.schema)
                .map(|s| s.rv);
            (r.schema.clone(), rv)
        })
        .collect()
}

fn fresh(state: &State, cluster: &str, entry: &Entry, export_rv: u64) -> bool {
    entry.export_rv == export_rv
        && entry
            .schema_rvs
            .iter()
            .all(|(name, rv)| state.lookup(cluster, &schemas(), "", name).map(|s| s.rv) == *rv)
}

impl ViewCache {
    /// The export behind `at` (it must exist and have its identity) and what its virtual
    /// workspace serves.
    pub fn view(&self, state: &State, at: &At<'_>) -> ApiResult<(Arc<Export>, Arc<Registry>)> {
        if !state.clusters.contains_key(at.export_cluster) {
            return Err(ApiError::path_not_found());
        }
        let stored = state
            .lookup(at.export_cluster, &exports(), "", at.export)
            .ok_or_else(ApiError::path_not_found)?;
        let key = (at.export_cluster.to_owned(), at.export.to_owned());
        let cached = self.entries.lock().ok().and_then(|e| e.get(&key).cloned());
        if let Some(entry) = cached.filter(|e| fresh(state, at.export_cluster, e, stored.rv)) {
            return Ok((entry.export.clone(), entry.registry.clone()));
        }
        let export = Export::from_value(at.export_cluster, &stored.value()?);
        if export.identity_hash.is_empty() {
            return Err(ApiError::path_not_found());
        }
        let entry = Arc::new(Entry {
            export_rv: stored.rv,
            schema_rvs: schema_rvs(state, &export),
            registry: Arc::new(registry(state, &export)),
            export: Arc::new(export),
        });
        let cacheable = entry
            .export
            .claims
            .iter()
            .all(|c| c.identity_hash.is_empty());
        if let (true, Ok(mut entries)) = (cacheable, self.entries.lock()) {
            entries.insert(key, entry.clone());
        }
        Ok((entry.export.clone(), entry.registry.clone()))
    }
}

//! The memory a world's scripts may hold together, and who holds it.
//!
//! Invariant: every game VM of a world (the scene's own and each execution group's) is a
//! member of the world's one [`ScriptMemory`], whose limit bounds their memory together.
//! Before a callback the VM's own limit is set to what the other members leave of the
//! world's (a wave of group callbacks, which run at once, gets shares fixed before the first
//! starts, from usage measured then, so the outcome never depends on which lane ran first).
//! Inside the scene's VM each owner's allocations (a system's, a setup script's) are counted
//! in a Luau memory category of its own; a group's VM belongs to one owner. When a callback
//! runs out, the holder of the most memory is named: the failing callback counted with what
//! it had allocated, every other owner with what it keeps after a collection.

#![expect(
    unsafe_code,
    reason = "reads Luau's per-category byte counters, which mlua exposes only through a heap dump that costs the heap's size"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use mlua::{Lua, WeakLua};

/// The most memory categories a VM counts owners in (Luau has 256; mlua keeps `main` at 0
/// and refuses a 256th name). Owners past it share the last one.
const CATEGORIES: usize = 250;

/// The name of the category owners past [`CATEGORIES`] share.
const SHARED_CATEGORY: &str = "shared";

/// Who to stop when a holder is named: a system, and a part of it (an execution group's root)
/// when the holder is one part only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Holder {
    /// The owner's name as calls run under it (a system's name, a setup script's, or a group
    /// system's name for a group's VM).
    pub(crate) owner: String,
    /// The part of the owner, for a group's VM: its root.
    pub(crate) part: Option<String>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.part {
            None => write!(f, "`{}`", self.owner),
            Some(part) => write!(f, "`{}` at root {part}", self.owner),
        }
    }
}

/// One VM of a world.
struct Member {
    lua: WeakLua,
    /// The VM's one owner (a group's), or `None` for the scene's VM, whose owners are told
    /// apart by memory category.
    holder: Option<Holder>,
    /// Its usage measured when a wave began, read instead of the live figure while the wave
    /// runs.
    measured: Option<usize>,
}

/// The memory a world's scripts may hold together (see the module docs).
#[derive(Default)]
pub(crate) struct ScriptMemory {
    limit: AtomicUsize,
    members: Mutex<Vec<Member>>,
}

impl std::fmt::Debug for ScriptMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptMemory")
            .field("limit", &self.limit())
            .finish_non_exhaustive()
    }
}

impl ScriptMemory {
    /// A pool of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            members: Mutex::new(Vec::new()),
        }
    }

    /// The bytes the world's scripts may hold together.
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Sets the limit (for the calls made from now on).
    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a VM; `holder` is its one owner (a group's VM), `None` for the scene's VM.
    pub(crate) fn join(&self, lua: &Lua, holder: Option<Holder>) {
        let mut members = self.members();
        members.retain(|m| m.lua.try_upgrade().is_some());
        members.push(Member {
            lua: lua.weak(),
            holder,
            measured: None,
        });
    }

    /// The bytes every member holds now (dropped VMs left out).
    pub(crate) fn used(&self) -> usize {
        self.members()
            .iter()
            .filter_map(|m| Some(m.measured.unwrap_or(m.lua.try_upgrade()?.used_memory())))
            .sum()
    }

    /// What the members other than `lua` hold (as measured at a wave's start, during one).
    fn used_by_others(&self, lua: &Lua) -> usize {
        let me = lua.weak();
        self.members()
            .iter()
            .filter(|m| m.lua != me)
            .filter_map(|m| Some(m.measured.unwrap_or(m.lua.try_upgrade()?.used_memory())))
            .sum()
    }

    /// The limit for a callback of `lua` that runs alone: what the other members leave.
    pub(crate) fn headroom(&self, lua: &Lua) -> usize {
        self.limit().saturating_sub(self.used_by_others(lua))
    }

    /// Starts a wave of callbacks in `vms` (which run at once): measures every member, and
    /// returns each VM's limit for the wave, its usage plus an equal share of what is free.
    pub(crate) fn begin_wave(&self, vms: &[&Lua]) -> Vec<usize> {
        let mut members = self.members();
        for member in members.iter_mut() {
            member.measured = member.lua.try_upgrade().map(|lua| lua.used_memory());
        }
        let total: usize = members.iter().filter_map(|m| m.measured).sum();
        let free = self.limit().saturating_sub(total);
        let share = free / vms.len().max(1);
        vms.iter().map(|lua| lua.used_memory() + share).collect()
    }

    /// Ends a wave: live figures again.
    pub(crate) fn end_wave(&self) {
        for member in self.members().iter_mut() {
            member.measured = None;
        }
    }

    /// The holder of the most memory when a callback of `owner` in `lua` ran out, with its
    /// bytes; `owner` counts with `owner_bytes`, what it had when it failed, and every other
    /// holder with what it keeps after a collection. Ties go to the failing owner, then to
    /// holders in the order they joined.
    pub(crate) fn largest_holder(
        &self,
        lua: &Lua,
        owner: &Holder,
        owner_bytes: usize,
    ) -> (Holder, usize) {
        let mut best = (owner.clone(), owner_bytes);
        let mut consider = |holder: Holder, bytes: usize| {
            if bytes > best.1 && holder != *owner {
                best = (holder, bytes);
            }
        };
        let me = lua.weak();
        let members: Vec<(Option<Lua>, Option<Holder>, Option<usize>)> = self
            .members()
            .iter()
            .map(|m| (m.lua.try_upgrade(), m.holder.clone(), m.measured))
            .collect();
        for (member, holder, measured) in members {
            let Some(member) = member else {
                continue;
            };
            let is_me = member.weak() == me;
            match holder {
                // A VM of one owner: all it holds is that owner's.
                Some(holder) => {
                    let bytes = match measured {
                        Some(bytes) if !is_me => bytes,
                        _ => {
                            if !is_me {
                                let _ = member.gc_collect();
                            }
                            member.used_memory()
                        }
                    };
                    consider(holder, bytes);
                }
                // The scene's VM: each owner by its category.
                None => {
                    let _ = member.gc_collect();
                    for (name, bytes) in category_usage(&member) {
                        consider(
                            Holder {
                                owner: name,
                                part: None,
                            },
                            bytes,
                        );
                    }
                }
            }
        }
        best
    }
}

/// The owners of a VM's memory categories, in the order they were first given one: the k-th
/// is mlua's category `k + 1` (mlua registers names in order after `main`, which is 0).
#[derive(Debug, Default)]
pub(crate) struct Categories {
    owners: Vec<String>,
}

impl Categories {
    /// Puts `lua`'s allocations from now on in `owner`'s category.
    pub(crate) fn enter(&mut self, lua: &Lua, owner: &str) {
        let position = match self.owners.iter().position(|o| o == owner) {
            Some(position) => position,
            None if self.owners.len() < CATEGORIES => {
                self.owners.push(owner.to_owned());
                self.owners.len() - 1
            }
            None => {
                let _ = lua.set_memory_category(SHARED_CATEGORY);
                return;
            }
        };
        let _ = lua.set_memory_category(&format!("owner{position}"));
    }

    /// Puts `lua`'s allocations back in the VM's own category.
    pub(crate) fn leave(lua: &Lua) {
        let _ = lua.set_memory_category("main");
    }

    /// The bytes `owner`'s category holds in `lua` now.
    pub(crate) fn bytes_of(&self, lua: &Lua, owner: &str) -> usize {
        match self.owners.iter().position(|o| o == owner) {
            Some(position) => category_bytes(lua, position + 1),
            None => 0,
        }
    }
}

/// Every owner of the scene VM's categories with the bytes its category holds now.
fn category_usage(lua: &Lua) -> Vec<(String, usize)> {
    let owners: Vec<String> = match lua.app_data_ref::<super::host::VmState>() {
        Some(state) => state.categories.owners.clone(),
        None => return Vec::new(),
    };
    owners
        .into_iter()
        .enumerate()
        .map(|(position, owner)| {
            let bytes = category_bytes(lua, position + 1);
            (owner, bytes)
        })
        .collect()
}

/// The bytes Luau counts in memory category `category` of `lua`.
fn category_bytes(lua: &Lua, category: usize) -> usize {
    debug_assert!(category <= CATEGORIES, "Luau counts 256 categories");
    let category = i32::try_from(category).unwrap_or(0);
    lua.exec_raw_lua(|raw| {
        let state = raw.state();
        // SAFETY: `state` is the VM's current Luau state, valid while `exec_raw_lua` holds the
        // VM's lock; `lua_totalbytes` only reads the global state's per-category counter, and
        // `category` is below Luau's 256 categories (at most `CATEGORIES`, checked above).
        unsafe { mlua::ffi::lua_totalbytes(state, category) }
    })
}

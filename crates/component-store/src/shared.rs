//! `SharedSet`: a component set shared copy-on-write with snapshots, which remembers when its
//! holder has made it private, so writes after the first skip the atomic uniqueness check, and
//! which may keep a spare set whose memory its next copy reuses.
//!
//! Invariant: `private` is true only while this handle's `Arc` has a strong count of one and no
//! weak references (none are ever created). `make_mut` sets it after making the set unique;
//! `share`, the only way a second strong reference is made, clears it first. Every write to a
//! set goes through `make_mut`, which takes `&mut self`, so no `share` can run concurrently.
//! A copy made by `make_mut` forks its removal log's timeline. `spare` is owned by this handle
//! alone (`share` never passes it on) and is never read: it is only memory, overwritten whole
//! by the next copy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::set::ComponentSet;

/// A component set behind `Arc`, with the "made private by this holder" flag.
#[derive(Debug)]
pub(crate) struct SharedSet {
    arc: Arc<ComponentSet>,
    private: AtomicBool,
    /// A set this handle no longer needs (the world's copy a restore replaced), kept so the
    /// next copy-on-write copy goes into its buffers instead of fresh memory.
    spare: Option<Box<ComponentSet>>,
}

impl SharedSet {
    pub(crate) fn new(set: ComponentSet) -> Self {
        Self {
            arc: Arc::new(set),
            private: AtomicBool::new(true),
            spare: None,
        }
    }

    /// The set, for reading.
    #[inline]
    pub(crate) fn get(&self) -> &ComponentSet {
        &self.arc
    }

    /// A second handle on the same set (for a snapshot). Both handles must copy before their
    /// next write.
    pub(crate) fn share(&self) -> Self {
        self.private.store(false, Ordering::Relaxed);
        Self {
            arc: Arc::clone(&self.arc),
            private: AtomicBool::new(false),
            spare: None,
        }
    }

    /// A handle on `saved`'s set (a restore) that keeps, as its spare, the memory of the set
    /// `replaced` held when no other handle shares it (else `replaced`'s own spare).
    pub(crate) fn restored(saved: &SharedSet, replaced: SharedSet) -> Self {
        let mut restored = saved.share();
        let SharedSet { arc, spare, .. } = replaced;
        restored.spare = match Arc::try_unwrap(arc) {
            Ok(set) => Some(Box::new(set)),
            Err(_) => spare,
        };
        restored
    }

    /// Whether this handle made the set private (so no other handle shares it, and
    /// [`SharedSet::make_mut`] copies nothing).
    pub(crate) fn is_private(&mut self) -> bool {
        *self.private.get_mut()
    }

    /// Whether two handles share one set.
    pub(crate) fn ptr_eq(&self, other: &SharedSet) -> bool {
        Arc::ptr_eq(&self.arc, &other.arc)
    }

    /// The set for writing: copied first if a snapshot shares it, and without any atomic
    /// operation once this handle made it private.
    #[inline(always)]
    #[expect(
        unsafe_code,
        reason = "skips Arc::make_mut's atomic check on private sets"
    )]
    pub(crate) fn make_mut(&mut self) -> &mut ComponentSet {
        if !*self.private.get_mut() {
            self.make_private();
        }
        debug_assert_eq!(Arc::strong_count(&self.arc), 1, "a private set is unshared");
        // SAFETY: `private` is true (set just above if it was not), so by the module invariant
        // this `Arc` is the only strong reference and no weak reference exists; `&mut self`
        // excludes every other borrow of it. The data is therefore reachable only through this
        // handle, and handing out `&mut` to it for the duration of the borrow is sound.
        unsafe { &mut *Arc::as_ptr(&self.arc).cast_mut() }
    }

    /// Makes the set unique to this handle (copying it if another handle shares it) and
    /// records that it is.
    #[cold]
    #[inline(never)]
    fn make_private(&mut self) {
        if Arc::get_mut(&mut self.arc).is_none() {
            // Shared: copy into the spare's buffers when there is one, else into fresh ones
            // with room for the rows this holder is likely to add.
            let mut copy = match self.spare.take() {
                Some(mut spare) => {
                    ComponentSet::clone_from(&mut spare, &self.arc);
                    *spare
                }
                None => self.arc.clone_for_write(),
            };
            // A copy: from here on its removals are not the other holders' history.
            copy.fork_timeline();
            self.arc = Arc::new(copy);
        }
        *self.private.get_mut() = true;
    }
}

impl std::ops::Deref for SharedSet {
    type Target = ComponentSet;

    #[inline]
    fn deref(&self) -> &ComponentSet {
        &self.arc
    }
}

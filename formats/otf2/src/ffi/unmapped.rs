//! Callbacks that only name their event kind: the kinds tracex does not map to the IR (tasks,
//! locks, RMA synchronisation, I/O handle management, ...) report to [`EventHandler::unmapped`]
//! so the importer counts what it leaves out instead of skipping it silently; the records whose
//! content another record carries report to [`EventHandler::bookkeeping`].

use std::os::raw::c_void;

#[allow(unused_imports)]
use otf2_sys::*;

use super::error::{check, Result};
use super::handler::{evt, EventHandler};

macro_rules! by_kind {
    ($register:ident, $method:ident, $($setter:ident => $name:literal ($($t:ty),*);)*) => {
        /// Registers a callback for each event kind listed that hands its kind name to the
        /// handler.
        pub(super) fn $register(cbs: *mut OTF2_GlobalEvtReaderCallbacks) -> Result<()> {
            $(
                {
                    unsafe extern "C" fn cb(
                        loc: OTF2_LocationRef,
                        t: OTF2_TimeStamp,
                        user: *mut c_void,
                        list: *mut OTF2_AttributeList,
                        $(_: $t),*
                    ) -> OTF2_CallbackCode {
                        // SAFETY: `user` is the EvtCtx of the running read, `list` libotf2's.
                        unsafe { evt(user, list, |h: &mut dyn EventHandler, _| h.$method(loc.0, t, $name)) }
                    }
                    // SAFETY: `cb` has the signature libotf2 declares for this event kind.
                    check(unsafe { $setter(cbs, Some(cb)) }, stringify!($setter))?;
                }
            )*
            Ok(())
        }
    };
}

by_kind! {
    register_bookkeeping, bookkeeping,
    OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback => "MpiIsendComplete" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback => "MpiIrecvRequest" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback => "MpiCollectiveBegin" ();
    OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback => "NonBlockingCollectiveRequest" (u64);
}

by_kind! {
    register_unmapped, unmapped,
    OTF2_GlobalEvtReaderCallbacks_SetMpiRequestTestCallback => "MpiRequestTest" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetMpiRequestCancelledCallback => "MpiRequestCancelled" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetOmpAcquireLockCallback => "OmpAcquireLock" (u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetOmpReleaseLockCallback => "OmpReleaseLock" (u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetOmpTaskCreateCallback => "OmpTaskCreate" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetOmpTaskSwitchCallback => "OmpTaskSwitch" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetOmpTaskCompleteCallback => "OmpTaskComplete" (u64);
    OTF2_GlobalEvtReaderCallbacks_SetRmaWinCreateCallback => "RmaWinCreate" (OTF2_RmaWinRef);
    OTF2_GlobalEvtReaderCallbacks_SetRmaWinDestroyCallback => "RmaWinDestroy" (OTF2_RmaWinRef);
    OTF2_GlobalEvtReaderCallbacks_SetRmaCollectiveBeginCallback => "RmaCollectiveBegin" ();
    OTF2_GlobalEvtReaderCallbacks_SetRmaCollectiveEndCallback => "RmaCollectiveEnd" (OTF2_CollectiveOp, OTF2_RmaSyncLevel, OTF2_RmaWinRef, u32, u64, u64);
    OTF2_GlobalEvtReaderCallbacks_SetRmaGroupSyncCallback => "RmaGroupSync" (OTF2_RmaSyncLevel, OTF2_RmaWinRef, OTF2_GroupRef);
    OTF2_GlobalEvtReaderCallbacks_SetRmaRequestLockCallback => "RmaRequestLock" (OTF2_RmaWinRef, u32, u64, OTF2_LockType);
    OTF2_GlobalEvtReaderCallbacks_SetRmaAcquireLockCallback => "RmaAcquireLock" (OTF2_RmaWinRef, u32, u64, OTF2_LockType);
    OTF2_GlobalEvtReaderCallbacks_SetRmaTryLockCallback => "RmaTryLock" (OTF2_RmaWinRef, u32, u64, OTF2_LockType);
    OTF2_GlobalEvtReaderCallbacks_SetRmaReleaseLockCallback => "RmaReleaseLock" (OTF2_RmaWinRef, u32, u64);
    OTF2_GlobalEvtReaderCallbacks_SetRmaSyncCallback => "RmaSync" (OTF2_RmaWinRef, u32, OTF2_RmaSyncType);
    OTF2_GlobalEvtReaderCallbacks_SetRmaWaitChangeCallback => "RmaWaitChange" (OTF2_RmaWinRef);
    OTF2_GlobalEvtReaderCallbacks_SetRmaAtomicCallback => "RmaAtomic" (OTF2_RmaWinRef, u32, OTF2_RmaAtomicType, u64, u64, u64);
    OTF2_GlobalEvtReaderCallbacks_SetRmaOpTestCallback => "RmaOpTest" (OTF2_RmaWinRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetRmaOpCompleteRemoteCallback => "RmaOpCompleteRemote" (OTF2_RmaWinRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetThreadTeamBeginCallback => "ThreadTeamBegin" (OTF2_CommRef);
    OTF2_GlobalEvtReaderCallbacks_SetThreadTeamEndCallback => "ThreadTeamEnd" (OTF2_CommRef);
    OTF2_GlobalEvtReaderCallbacks_SetThreadAcquireLockCallback => "ThreadAcquireLock" (OTF2_Paradigm, u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetThreadReleaseLockCallback => "ThreadReleaseLock" (OTF2_Paradigm, u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetThreadTaskCreateCallback => "ThreadTaskCreate" (OTF2_CommRef, u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetThreadTaskSwitchCallback => "ThreadTaskSwitch" (OTF2_CommRef, u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetThreadTaskCompleteCallback => "ThreadTaskComplete" (OTF2_CommRef, u32, u32);
    OTF2_GlobalEvtReaderCallbacks_SetThreadCreateCallback => "ThreadCreate" (OTF2_CommRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetThreadBeginCallback => "ThreadBegin" (OTF2_CommRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetThreadWaitCallback => "ThreadWait" (OTF2_CommRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetThreadEndCallback => "ThreadEnd" (OTF2_CommRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetCallingContextEnterCallback => "CallingContextEnter" (OTF2_CallingContextRef, u32);
    OTF2_GlobalEvtReaderCallbacks_SetCallingContextLeaveCallback => "CallingContextLeave" (OTF2_CallingContextRef);
    OTF2_GlobalEvtReaderCallbacks_SetIoCreateHandleCallback => "IoCreateHandle" (OTF2_IoHandleRef, OTF2_IoAccessMode, OTF2_IoCreationFlag, OTF2_IoStatusFlag);
    OTF2_GlobalEvtReaderCallbacks_SetIoDestroyHandleCallback => "IoDestroyHandle" (OTF2_IoHandleRef);
    OTF2_GlobalEvtReaderCallbacks_SetIoDuplicateHandleCallback => "IoDuplicateHandle" (OTF2_IoHandleRef, OTF2_IoHandleRef, OTF2_IoStatusFlag);
    OTF2_GlobalEvtReaderCallbacks_SetIoSeekCallback => "IoSeek" (OTF2_IoHandleRef, i64, OTF2_IoSeekOption, u64);
    OTF2_GlobalEvtReaderCallbacks_SetIoChangeStatusFlagsCallback => "IoChangeStatusFlags" (OTF2_IoHandleRef, OTF2_IoStatusFlag);
    OTF2_GlobalEvtReaderCallbacks_SetIoDeleteFileCallback => "IoDeleteFile" (OTF2_IoParadigmRef, OTF2_IoFileRef);
    OTF2_GlobalEvtReaderCallbacks_SetIoOperationTestCallback => "IoOperationTest" (OTF2_IoHandleRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetIoOperationIssuedCallback => "IoOperationIssued" (OTF2_IoHandleRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetIoOperationCancelledCallback => "IoOperationCancelled" (OTF2_IoHandleRef, u64);
    OTF2_GlobalEvtReaderCallbacks_SetIoAcquireLockCallback => "IoAcquireLock" (OTF2_IoHandleRef, OTF2_LockType);
    OTF2_GlobalEvtReaderCallbacks_SetIoReleaseLockCallback => "IoReleaseLock" (OTF2_IoHandleRef, OTF2_LockType);
    OTF2_GlobalEvtReaderCallbacks_SetIoTryLockCallback => "IoTryLock" (OTF2_IoHandleRef, OTF2_LockType);
    OTF2_GlobalEvtReaderCallbacks_SetCommCreateCallback => "CommCreate" (OTF2_CommRef);
    OTF2_GlobalEvtReaderCallbacks_SetCommDestroyCallback => "CommDestroy" (OTF2_CommRef);
}

package conformance

import "testing"

// syncerChecks are the syncer scenarios: the design's invariants, the seed
// bugs, and the host features, each named after what it proves.
var syncerChecks = []struct {
	name string
	fn   func(t *testing.T, nb Factory)
}{
	{"Syncer_PushPull_RoundTrip", checkSyncerPushPull_RoundTrip},
	{"Syncer_Push_NothingDirtySendsNoRequest", checkSyncerPush_NothingDirtySendsNoRequest},
	{"Seed2590_ScopedPullIsBoundedByScope", checkSeed2590_ScopedPullIsBoundedByScope},
	{"Seed2366_DirectoryMarkPushesExactlyTheNewFile", checkSeed2366_DirectoryMarkPushesExactlyTheNewFile},
	{"Seed3193_NoOpPushNeverVouchesForUnreadShards", checkSeed3193_NoOpPushNeverVouchesForUnreadShards},
	{"SeedLab_PullThenPushUploadsNothing", checkSeedLab_PullThenPushUploadsNothing},
	{"Invariant1_FingerprintsComeFromTheDeliveringResponse", checkInvariant1_FingerprintsComeFromTheDeliveringResponse},
	{"Invariant2_PullNeverClearsDirty", checkInvariant2_PullNeverClearsDirty},
	{"Invariant3_DeletionsNeedPositiveEvidence", checkInvariant3_DeletionsNeedPositiveEvidence},
	{"Invariant4_PeerDeletionRemovesOnlyUnchangedCopies", checkInvariant4_PeerDeletionRemovesOnlyUnchangedCopies},
	{"Invariant5_ConcurrentWritersLoseNothing", checkInvariant5_ConcurrentWritersLoseNothing},
	{"Invariant6_ScopedPullNeverAdvancesOutsideScope", checkInvariant6_ScopedPullNeverAdvancesOutsideScope},
	{"Invariant7_PathsAreValidated", checkInvariant7_PathsAreValidated},
	{"Invariant8_FaultAtEveryRequestOfAPushConverges", checkInvariant8_FaultAtEveryRequestOfAPushConverges},
	{"Syncer_Pull_BadIndexIsTypedAndHarmless", checkSyncerPull_BadIndexIsTypedAndHarmless},
	{"Syncer_Pull_UnscopedAfterPeerTouchedOneShard", checkSyncerPull_UnscopedAfterPeerTouchedOneShard},
	{"Syncer_TwoPhasePush_PrepareThenCommit", checkSyncerTwoPhasePush_PrepareThenCommit},
	{"Syncer_PreviewPush_CountsWithoutRequests", checkSyncerPreviewPush_CountsWithoutRequests},
	{"Syncer_MetadataOnly_LazyThenHydrate", checkSyncerMetadataOnly_LazyThenHydrate},
	{"Syncer_Namespaces_AreIndependent", checkSyncerNamespaces_AreIndependent},
	{"Control_RecordsBypassTheIndex", checkControlRecordsBypassTheIndex},
	{"Verify_HealthyStore", checkVerifyHealthyStore},
	{"Syncer_Cancellation_LeavesNothingTorn", checkSyncerCancellation_LeavesNothingTorn},
	{"Regression_SyncAfterLocalDeleteAndEdit_NothingComesBack", checkRegression_SyncAfterLocalDeleteAndEdit_NothingComesBack},
	{"Regression_ConcurrentPushesOfOnePath_WinnerStaysReadable", checkRegression_ConcurrentPushesOfOnePath_WinnerStaysReadable},
	{"Regression_WriterKilledMidPush_CommittedStaysReadable", checkRegression_WriterKilledMidPush_CommittedStaysReadable},
	{"Regression_PullRemovalNeverRemovesADownloadsDirectory", checkRegression_PullRemovalNeverRemovesADownloadsDirectory},
	{"Regression_PushOfEditDeletedRemotely_Conflicts", checkRegression_PushOfEditDeletedRemotely_Conflicts},
	{"Regression_RolledBackManifest_Refused", checkRegression_RolledBackManifest_Refused},
	{"Regression_FileAndDirectoryOfOneName_Conflict", checkRegression_FileAndDirectoryOfOneName_Conflict},
	{"Regression_HostileNames_SyncOrAreReported", checkRegression_HostileNames_SyncOrAreReported},
	{"Regression_PushPaths_OnlyThosePaths", checkRegression_PushPaths_OnlyThosePaths},
	{"Regression_KilledPullTempFiles_Removed", checkRegression_KilledPullTempFiles_Removed},
	{"Syncer_Excludes_NeverCrossTheBoundary", checkSyncerExcludes_NeverCrossTheBoundary},
}

// RunSyncer runs every syncer scenario as a subtest of t, each on fresh
// backends from newBackend, with real cache directories, and checks the
// remote's consistency after each. The store must claim ConditionalPut or
// AtomicCreate: the default format commits by the create-if-absent of a
// log entry (a store with neither commits only under a lock; see the
// syncer package).
func RunSyncer(t *testing.T, newBackend Factory) {
	for _, c := range syncerChecks {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t)
			if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
				t.Skip("backend claims neither ConditionalPut nor AtomicCreate: the syncer commits under a lock there")
			}
			c.fn(t, newBackend)
		})
	}
}

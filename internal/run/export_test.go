package run

// EventChannel is the notification channel that wakes observers of a run,
// for tests that append to a log without the service.
var EventChannel = eventChannel

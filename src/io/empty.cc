// Anchors the library when a layer has no other sources yet.

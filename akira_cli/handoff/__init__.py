"""The hand-off of a run to a person, on the adapters' side of the loop: the pull request a
git-native run opens or updates when it completes or needs a person (`pull_request`)."""

#pragma once
// Which build of Mantissa this is: the release version, and the commit it was built from where
// the source was a git checkout. Runs record it, so that a study or comparison can tell results
// of two builds apart even between releases.

#include <string>

namespace mantissa {

// "0.2.0+git.1e335e4a9c01", with ".modified" where tracked files differed from that commit
// when it was built; the version alone ("0.2.0") outside a checkout.
const std::string& buildIdentity();

} // namespace mantissa

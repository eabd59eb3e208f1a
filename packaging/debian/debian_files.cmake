# What Debian policy and lintian want in every binary package: the machine-readable
# copyright file and the Debian changelog, gzip'ed without a timestamp, in
# /usr/share/doc/<package>/ of both packages.
set(MANTISSA_DEB_SOURCE mantissa)
set(MANTISSA_DEB_RELEASE 1)
set(MANTISSA_DEB_VERSION ${PROJECT_VERSION}-${MANTISSA_DEB_RELEASE})
# A real address belongs here when the project publishes one; the default is the project's
# commit identity.
set(MANTISSA_DEB_MAINTAINER "Mantissa maintainers <maintainers@users.noreply.a-seed-b1c92c43.example>"
    CACHE STRING "The Maintainer of the Debian packages (name <address>)")
# RFC 5322 date, as dpkg-parsechangelog expects; string(TIMESTAMP) honours SOURCE_DATE_EPOCH
# for reproducible packages.
string(TIMESTAMP MANTISSA_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${CMAKE_CURRENT_LIST_DIR}/changelog.in ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog @ONLY)
mantissa_gzip(${CMAKE_CURRENT_BINARY_DIR}/debian/changelog ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian.gz)
foreach(component app dev)
  if(component STREQUAL "app")
    set(docdir ${MANTISSA_APP_DOCDIR})
  else()
    set(docdir ${MANTISSA_DEV_DOCDIR})
  endif()
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/copyright ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian.gz
          DESTINATION ${docdir} COMPONENT ${component})
endforeach()

# Lintian overrides, for tags that describe an upload to Debian's archive, which these
# packages are not: initial-upload-closes-no-bugs asks the first changelog entry to close
# the archive's "intent to package" bug.
foreach(package mantissa mantissa-dev)
  if(package STREQUAL "mantissa")
    set(component app)
  else()
    set(component dev)
  endif()
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/debian/lintian/${package}
       "# Built from the source tree, not uploaded to Debian: there is no ITP bug to close.\n"
       "${package}: initial-upload-closes-no-bugs\n")
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/debian/lintian/${package}
          DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides COMPONENT ${component})
endforeach()

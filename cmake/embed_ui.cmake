# The dashboard's files (web/ui, and the npm packages' files listed in web/vendor.txt), compiled
# into `target` as byte arrays, so that the controller serves them with nothing beside the
# binary. Configure time lists the files (a new file in web/ui needs a re-configure, like a new
# source); build time reads them, so an edit rebuilds only the generated source.

set(GANGWAY_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake")

function(gangway_embed_ui target)
  set(web "${CMAKE_SOURCE_DIR}/web")
  file(GLOB ui_files CONFIGURE_DEPENDS "${web}/ui/*")
  set(manifest "")
  set(inputs "")
  foreach(f IN LISTS ui_files)
    get_filename_component(name "${f}" NAME)
    string(APPEND manifest "${name}\t${f}\n")
    list(APPEND inputs "${f}")
  endforeach()
  file(STRINGS "${web}/vendor.txt" vendor_lines REGEX "^[^#]")
  set(missing "")
  foreach(line IN LISTS vendor_lines)
    string(REGEX MATCH "^([^ ]+) +([^ ]+)$" matched "${line}")
    set(f "${web}/node_modules/${CMAKE_MATCH_2}")
    if(NOT EXISTS "${f}")
      list(APPEND missing "${CMAKE_MATCH_2}")
    endif()
    string(APPEND manifest "${CMAKE_MATCH_1}\t${f}\n")
    list(APPEND inputs "${f}")
  endforeach()
  if(missing)
    message(FATAL_ERROR "The dashboard's npm packages are not installed (missing web/node_modules/"
                        "${missing}). Run scripts/deps.sh, or `npm ci` in web/.")
  endif()
  set(out_dir "${CMAKE_BINARY_DIR}/generated")
  file(MAKE_DIRECTORY "${out_dir}")
  file(CONFIGURE OUTPUT "${out_dir}/ui_manifest.txt" CONTENT "${manifest}")
  add_custom_command(
    OUTPUT "${out_dir}/ui_files_data.cc"
    COMMAND ${CMAKE_COMMAND} -DMANIFEST=${out_dir}/ui_manifest.txt
            -DOUT=${out_dir}/ui_files_data.cc -P "${GANGWAY_EMBED_SCRIPT}"
    DEPENDS ${inputs} "${out_dir}/ui_manifest.txt" "${GANGWAY_EMBED_SCRIPT}"
    COMMENT "Embedding the dashboard's files"
    VERBATIM)
  target_sources(${target} PRIVATE "${out_dir}/ui_files_data.cc")
endfunction()

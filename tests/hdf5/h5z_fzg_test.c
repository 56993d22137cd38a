/* The fzg HDF5 filter, loaded by HDF5 itself from HDF5_PLUGIN_PATH as a user would load it:
 * chunked datasets written through it and read back (the bound held, NaN kept, less storage
 * than raw), a shipped config named in cd_values, a lossless integer dataset exact, and a
 * filter that cannot run (an unknown config) failing the write rather than storing garbage.
 *   HDF5_PLUGIN_PATH=<build>/plugins FZG_CONFIG_DIR=<source>/configs h5z_fzg_test FILE.h5 */
#include <hdf5.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define FZG_FILTER 305
enum { NZ = 20, NY = 30, NX = 40, N = NZ * NY * NX };


/* cd_values for mode, bound and an optional config name. */
static size_t cd_values(unsigned mode, double bound, const char* name, unsigned* v) {
  uint64_t bits;
  memcpy(&bits, &bound, sizeof bits);
  v[0] = mode, v[1] = (unsigned)(bits & 0xffffffffu), v[2] = (unsigned)(bits >> 32);
  size_t n = 3;
  if (name) {
    const size_t len = strlen(name);
    for (size_t i = 0; i < (len + 4) / 4; ++i) {
      unsigned word = 0;
      for (size_t b = 0; b < 4 && 4 * i + b < len; ++b) word |= (unsigned)(unsigned char)name[4 * i + b] << (8 * b);
      v[n++] = word;
    }
  }
  return n;
}

/* Writes `data` as dataset `name` with 10 x 30 x 40 chunks through the filter, with the fill
 * value `*fill` when given; 0 on success. */
static int write_filled_dataset(hid_t file, const char* name, hid_t type, const void* data, const unsigned* v,
                                size_t n, const float* fill) {
  const hsize_t dims[3] = {NZ, NY, NX}, chunk[3] = {10, NY, NX};
  hid_t space = H5Screate_simple(3, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  if (fill) H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, fill);
  int failed = H5Pset_filter(dcpl, FZG_FILTER, H5Z_FLAG_MANDATORY, n, v) < 0;
  hid_t set = failed ? -1 : H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  failed = failed || set < 0 || H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0;
  if (set >= 0 && H5Dclose(set) < 0) failed = 1;  /* chunks may be written as the dataset closes */
  H5Pclose(dcpl);
  H5Sclose(space);
  return failed;
}

static int write_dataset(hid_t file, const char* name, hid_t type, const void* data, const unsigned* v, size_t n) {
  return write_filled_dataset(file, name, type, data, v, n, NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  static float field[N], back[N], land[N];
  static uint16_t counts[N], counts_back[N];
  for (int i = 0; i < N; ++i) {
    field[i] = (float)(20.0 * sin(0.05 * i) + 3.0 * cos(0.0007 * i * i));
    counts[i] = (uint16_t)(i * 7 % 1000);
  }
  field[123] = NAN;
  const float fill = -999.f;  /* the dataset's fill value: land */
  for (int i = 0; i < N; ++i) land[i] = i % NX > 30 ? fill : field[i];
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CHECK(file >= 0);
  unsigned v[16];
  size_t n = cd_values(1, 0.01, NULL, v);  /* abs 0.01, the default config */
  CHECK(write_dataset(file, "abs", H5T_NATIVE_FLOAT, field, v, n) == 0);
  CHECK(H5Zfilter_avail(FZG_FILTER) > 0);
  n = cd_values(1, 0.01, "ratio", v);      /* a shipped config by name */
  CHECK(write_dataset(file, "ratio", H5T_NATIVE_FLOAT, field, v, n) == 0);
  n = cd_values(4, 0, NULL, v);            /* lossless */
  CHECK(write_dataset(file, "counts", H5T_NATIVE_UINT16, counts, v, n) == 0);
  n = cd_values(1, 0.01, "no-such-config", v);
  CHECK(write_dataset(file, "refused", H5T_NATIVE_FLOAT, field, v, n) != 0);
  n = cd_values(1, 0.01, NULL, v);         /* lossy on integers: refused at creation, not per chunk */
  CHECK(write_dataset(file, "refused-integers", H5T_NATIVE_UINT16, counts, v, n) != 0);
  CHECK(H5Lexists(file, "refused-integers", H5P_DEFAULT) == 0);
  n = cd_values(2, 1e-3, NULL, v);         /* rel 1e-3 with the dataset's fill value */
  CHECK(write_filled_dataset(file, "land", H5T_NATIVE_FLOAT, land, v, n, &fill) == 0);
  H5Fclose(file);

  file = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  CHECK(file >= 0);
  const char* lossy[] = {"abs", "ratio"};
  for (int k = 0; k < 2; ++k) {
    hid_t set = H5Dopen2(file, lossy[k], H5P_DEFAULT);
    CHECK(set >= 0 && H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
    double worst = 0;
    for (int i = 0; i < N; ++i)
      if (i == 123) CHECK(isnan(back[i]));
      else if (fabs((double)back[i] - field[i]) > worst) worst = fabs((double)back[i] - field[i]);
    CHECK(worst <= 0.01);
    CHECK(H5Dget_storage_size(set) < sizeof field);
    printf("%s: max error %.4g, %llu of %zu bytes stored\n", lossy[k], worst,
           (unsigned long long)H5Dget_storage_size(set), sizeof field);
    H5Dclose(set);
  }
  /* The fill value is a missing value: land exact, and rel is a fraction of the sea's range
   * (20.7 or so, against 1000 with -999 counted: a bound 40 times looser). */
  hid_t land_set = H5Dopen2(file, "land", H5P_DEFAULT);
  CHECK(land_set >= 0 && H5Dread(land_set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
  double lo = INFINITY, hi = -INFINITY, land_worst = 0;
  for (int i = 0; i < N; ++i)
    if (land[i] != fill && !isnan(land[i])) lo = fmin(lo, land[i]), hi = fmax(hi, land[i]);
  int land_changed = 0;
  for (int i = 0; i < N; ++i) {
    if (land[i] == fill) land_changed += memcmp(&land[i], &back[i], sizeof(float)) != 0;
    else if (!isnan(land[i]) && fabs((double)back[i] - land[i]) > land_worst) land_worst = fabs((double)back[i] - land[i]);
  }
  CHECK(land_changed == 0);
  CHECK(land_worst <= 1e-3 * (hi - lo));
  printf("land: max error %.4g (bound %.4g), fill points exact\n", land_worst, 1e-3 * (hi - lo));
  H5Dclose(land_set);
  hid_t set = H5Dopen2(file, "counts", H5P_DEFAULT);
  CHECK(set >= 0 && H5Dread(set, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, counts_back) >= 0);
  CHECK(memcmp(counts, counts_back, sizeof counts) == 0);
  H5Dclose(set);
  H5Fclose(file);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}

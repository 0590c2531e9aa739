package xliostats

// Version is one known value of stats_protocol_ver: the md5 of the
// src/core/util/xlio_stats.h a library was built from (configure.ac works
// it out; FACTS.md of the shared notes has the table by tag).
type Version struct {
	// MD5 is the field's value.
	MD5 string
	// Releases names the libxlio tags that write it.
	Releases string
	// Family is the layout family: F1 to F9 before 3.60 (header at the
	// start), G1 and G2 from 3.60 (header after the arrays).
	Family string
	// Layout names the offset table of this header blob (the first tag
	// that carries it); empty if it was never extracted, and then a file
	// of this version is refused.
	Layout string
	// Minors are the library versions (major, minor) that write it;
	// ver_info must name one of them.
	Minors [][2]uint16
}

// knownVersions lists every libxlio header blob from 2.0.6 to 3.70.2.
// Each md5 selects one offset table, in two variants (UTLS off and on);
// the file's size picks the variant.
var knownVersions = []Version{
	{MD5: "669659a917b06a41ce0ead4b9f89ffbb", Releases: "2.0.6, 2.0.7, 2.1.0", Family: "F1", Layout: "2.0.6", Minors: [][2]uint16{{2, 0}, {2, 1}}},
	{MD5: "db5ad5134b98905ad252c4ea4420cd8d", Releases: "2.1.1", Family: "F2", Layout: "2.1.1", Minors: [][2]uint16{{2, 1}}},
	{MD5: "02612a12d8dea14f16e041fe48824d89", Releases: "2.1.2-2.1.4, 3.0.2", Family: "F2", Layout: "2.1.2", Minors: [][2]uint16{{2, 1}, {3, 0}}},
	{MD5: "003f7dab86d4d385d8b58acbd3e3e978", Releases: "3.10.5", Family: "F3", Layout: "3.10.5", Minors: [][2]uint16{{3, 10}}},
	{MD5: "68cad0e31bbaafedf897937fd8e41122", Releases: "3.20.1-3.20.8, 3.21.1", Family: "F4", Layout: "3.20.1", Minors: [][2]uint16{{3, 20}, {3, 21}}},
	{MD5: "1929842874382ab6a55c2dad12db9f3f", Releases: "3.21.2, 3.30.0-3.30.2", Family: "F4", Layout: "3.21.2", Minors: [][2]uint16{{3, 21}, {3, 30}}},
	{MD5: "342711b8631eb916b78e236a675a5cf2", Releases: "3.30.3-3.30.5", Family: "F5", Layout: "3.30.3", Minors: [][2]uint16{{3, 30}}},
	{MD5: "26ade66f01ca3e207309f40ede22882a", Releases: "3.31.0, 3.31.1", Family: "F6", Layout: "3.31.0", Minors: [][2]uint16{{3, 31}}},
	{MD5: "4a438359311d693f0b1c0930b7d32304", Releases: "3.31.2", Family: "F7", Layout: "3.31.2", Minors: [][2]uint16{{3, 31}}},
	{MD5: "5e6f214f2fdf595474f922141a9f8ecd", Releases: "3.40.0, 3.40.1", Family: "F8", Layout: "3.40.0", Minors: [][2]uint16{{3, 40}}},
	{MD5: "89eb59642e8926c73425e93986039314", Releases: "3.40.2", Family: "F8", Layout: "3.40.2", Minors: [][2]uint16{{3, 40}}},
	{MD5: "d1e76d0ae3562f74d96aaa65d9d01bd4", Releases: "3.50.0-3.50.2", Family: "F8", Layout: "3.50.0", Minors: [][2]uint16{{3, 50}}},
	{MD5: "a7915650915cdc1afd46010808e44e2c", Releases: "3.50.3, 3.51.0, 3.51.1", Family: "F8", Layout: "3.50.3", Minors: [][2]uint16{{3, 50}, {3, 51}}},
	{MD5: "c436eaeb58822afa5ecb89540ef1cb19", Releases: "3.50.3-ea-target-api", Family: "F8", Layout: "3.50.3-ea-target-api", Minors: [][2]uint16{{3, 50}}},
	{MD5: "ad16fc8525fa0875598ebc5625de80c5", Releases: "3.940.1", Family: "F9", Layout: "3.940.1", Minors: [][2]uint16{{3, 940}}},
	{MD5: "c81df43fcf89b0217bee499de4051fe8", Releases: "3.940.2", Family: "F9", Layout: "3.940.2", Minors: [][2]uint16{{3, 940}}},
	{MD5: "3f7df2aca501e1138b3880e5da44f5f6", Releases: "3.941.0", Family: "?"},
	{MD5: "2c738e198dbc0e68a9aa37d47b095ff4", Releases: "3.60.0, 3.60.1", Family: "G1", Layout: "3.60.0", Minors: [][2]uint16{{3, 60}}},
	{MD5: "cd76e35002afa6c59ce1217356aa9451", Releases: "3.60.2-3.60.4, 3.61.0", Family: "G2", Layout: "3.60.2", Minors: [][2]uint16{{3, 60}, {3, 61}}},
	{MD5: "8acf4c5e11413c1da2c7f27b2ec26476", Releases: "3.61.1, 3.61.2, 3.70.0-3.70.2", Family: "G2", Layout: "3.61.1", Minors: [][2]uint16{{3, 61}, {3, 70}}},
}

// LookupVersion returns the known version with the given md5.
func LookupVersion(md5 string) (Version, bool) {
	for _, v := range knownVersions {
		if v.MD5 == md5 {
			return v, true
		}
	}
	return Version{}, false
}

// KnownVersions returns a copy of the table of known versions.
func KnownVersions() []Version { return append([]Version(nil), knownVersions...) }

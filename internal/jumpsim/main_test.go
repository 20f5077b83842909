package jumpsim

import (
	"testing"

	"github.com/exporterset/exporterset/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

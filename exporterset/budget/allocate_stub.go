package budget

// Stand-ins until the allocation lands (replaced by allocate.go and wanted.go).

func Allocate(in Input) Allocation {
	a := Allocation{}
	for _, s := range in.Sets {
		a.Grants = append(a.Grants, Grant{Name: s.Name, Allowed: s.Instances})
		a.UsedInstances += s.Instances
	}
	return a
}

func WantedOf(min, max, minAvailable, leased, waiting, bookedDue int32) int32 {
	w := leased + minAvailable + waiting + bookedDue
	if w < min {
		w = min
	}
	if max > 0 && w > max {
		w = max
	}
	return w
}

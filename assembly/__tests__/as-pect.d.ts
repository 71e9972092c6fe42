/// <reference types="@as-pect/assembly/types/as-pect" />
